"""Running one guest call: a fresh store and instance, the granted mounts, the limits.

Per tool (and set of granted host bindings) the runner keeps one :class:`wasmtime.Linker`
with WASI and the bindings defined, and its ``instantiate_pre`` of the module, so import
resolution happens once. Per call it builds only what must be fresh: a store with a memory
limit and an epoch deadline callback (:mod:`._control`), a WASI context with exactly the
granted preopens (read-only ones with ``fs_mutable=False``), the arguments document as
``argv[1]``, no environment. A module built with the SDK leaves its result in its memory;
any other module also gets its arguments on stdin and has its stdout/stderr captured with
a cap.

The guest's deadline is its own timeout, or the pipeline's deadline for the call when that
comes first (:func:`~toolcage.runtime._deadline.claim_deadline`): the guest is stopped
inside wasmtime by then and the call reports its own timeout. The store is closed when the
run ends, however it ends, and what the run left is kept as plain data (:class:`GuestRun`),
never as wasmtime objects: a failed call's result holds no store, memory or pool slot.

Where it runs: a guest whose caller vouches that it has no effects and never waits, and
that has no mounts, starts on the calling thread -- the event loop's -- and moves to a guest
thread if it overruns :data:`INLINE_BUDGET` (see :meth:`WasmToolRunner.run`); the pipeline
asks for such a run with :meth:`WasmToolRunner.run_now` before it makes the call a task, so
a call that finishes there has none. Every other
guest runs on one of the engine's daemon guest threads (:class:`~.._threads.WorkerPool`),
pinned to the engine's guest CPU (:mod:`._affinity`), so the event loop never blocks,
independent calls run in parallel and a guest stuck in a host call cannot keep the process
from exiting. At most :data:`~._engine.POOL_INSTANCES` guests of an engine run at once (the
pooling allocator's slots); a call beyond that waits in its thread for a slot (one that
would start on the calling thread goes to a guest thread instead). When the awaiting task
is cancelled the guest is stopped at the next epoch tick and the cancellation waits for it
(briefly), so nothing keeps running unobserved.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import wasmtime
from toolcage.host_bindings import CallState, HostBinding, current_call
from toolcage.policies import GrantedMount

from .._deadline import CallDeadline, claim_deadline
from .._errors import ToolCancelledError, UsageError
from .._result import ToolResult
from .._threads import run_in_worker
from ._capi import NOT_A_FUNCTION, GuestStore, Instance, set_stdin_bytes
from ._control import OVERRAN, STOP_MESSAGE, CallControl
from ._engine import EngineClosedError, WasmEngine
from ._link import link
from ._modules import ModuleCache
from ._outcome import GuestRun, outcome
from ._output import CappedOutput

INLINE_BUDGET = 0.002
"""Seconds a guest started on the calling thread may run before it is moved to a guest
thread (it is stopped at the first epoch tick past this, at most one tick later)."""

REPLY = b"toolcage_reply"
"""The export of a module built with the SDK that says where its reply is: a text reply
(its text as it is, beside a small document of the rest) or a result document (see
:func:`~._outcome.outcome`)."""

RESULT_EXPORTS = (REPLY, b"toolcage_result")
"""The exports a module may leave its result through, preferred first: ``toolcage_result``
is the JSON result document of a module built with an earlier SDK."""

CANCEL_WAIT = 1.0
"""Seconds a cancelled call waits for its guest to stop (it stops at the next tick unless
it is inside a host call)."""


@dataclass(frozen=True, slots=True)
class GuestLimits:
    """The resource limits of one guest call."""

    timeout: float
    """Seconds before the guest is stopped."""
    memory_bytes: int = 64 << 20
    """Largest linear memory the guest may grow to."""
    output_bytes: int = 1 << 20
    """stdout bytes kept (stderr keeps a sixteenth of it); the rest is dropped."""
    reply_bytes: int = 16 << 10
    """UTF-8 bytes of the result's text the model receives uncut (the tool's
    ``truncate_bytes``): host bindings fit what they answer to it."""


class WasmToolRunner:
    """Runs guest modules of one engine.

    ::

        with WasmEngine() as engine:
            runner = WasmToolRunner(engine)
            result = await runner.run("file_read", b'{"path": "/workspace/a.txt"}',
                                      mounts, GuestLimits(timeout=10))
    """

    def __init__(self, engine: WasmEngine, modules: ModuleCache | None = None) -> None:
        self.engine = engine
        self._modules = modules
        self._pres: dict[tuple[str, tuple[str, ...]], _Prepared] = {}
        self._slow: set[tuple[str, tuple[str, ...]]] = set()
        self._lock = threading.Lock()
        self._modules_lock = threading.Lock()
        self._module_paths: dict[str, Path] = {}
        self._shared: dict[str, str] = {}
        engine.on_release(self._release)

    @property
    def modules(self) -> ModuleCache:
        """Where compiled modules come from (the engine's on-disk cache by default)."""
        modules = self._modules
        if modules is None:
            with self._modules_lock:
                modules = self._modules
                if modules is None:
                    modules = ModuleCache(self.engine.engine, settings=self.engine.settings)
                    for name, path in self._module_paths.items():
                        modules.register_path(name, path)
                    self._modules = modules
        return modules

    def register_module_path(self, name: str, path: Path) -> None:
        """Run tool ``name`` from the module file ``path`` (see
        :meth:`ModuleCache.register_path`), without opening the engine before its first use."""
        with self._modules_lock:
            self._module_paths[name] = path
            if self._modules is not None:
                self._modules.register_path(name, path)

    def share_module(self, name: str, module: str) -> None:
        """Run tool ``name`` from the built module ``module`` (the relay guest), which is
        compiled once for every tool that runs it; each tool still has a linker of its own."""
        self._shared[name] = module

    def prepare(
        self, name: str, bindings: Sequence[HostBinding] = (), module: wasmtime.Module | None = None
    ) -> wasmtime.InstancePre:
        """The linked, pre-instantiated module of tool ``name`` with ``bindings`` granted.

        An import the granted bindings (and WASI) do not provide fails here, with a message
        naming it: an ungranted capability is absent, not refused at call time.
        """
        return self._prepared(name, bindings, module).pre

    def _prepared(
        self, name: str, bindings: Sequence[HostBinding], module: wasmtime.Module | None = None
    ) -> _Prepared:
        key = (name, tuple(b.name for b in bindings))
        prepared = self._pres.get(key)
        if prepared is not None:
            return prepared
        with self._lock:
            prepared = self._pres.get(key)
            if prepared is None:
                # The engine first: once it is closed its modules are freed (under this lock).
                engine = self.engine.engine
                if module is None:
                    module = self.modules.get(self._shared.get(name, name))
                exported = {e.name for e in module.exports}
                prepared = _Prepared(
                    key,
                    link(name, engine, module, bindings),
                    left=next((n for n in RESULT_EXPORTS if n.decode() in exported), None),
                )
                self._pres[key] = prepared
        return prepared

    async def run(
        self,
        name: str,
        arguments: bytes,
        mounts: Sequence[GrantedMount],
        limits: GuestLimits,
        *,
        bindings: Sequence[HostBinding] = (),
        state: CallState | None = None,
        inline: bool = False,
    ) -> ToolResult:
        """Run tool ``name`` once with the JSON ``arguments``; its result, or its ToolError.

        ``inline=True`` is the caller's word that the guest changes nothing outside its
        result and that its host calls never wait (local files through ``fs``, the clock).
        Then, if it is granted no mounts -- so no WASI file operation can block, on a FIFO
        say -- it starts on the calling thread, which spares two thread hand-offs; if it
        runs past :data:`INLINE_BUDGET` it is stopped at the next epoch tick and run again
        on a guest thread. A tool whose last run took longer than the budget goes to a guest
        thread straight away.
        """
        deadline, timeout = _deadline(limits.timeout)
        if inline and not mounts:
            ran = self.run_now(name, arguments, limits, bindings=bindings, state=state)
            if ran is not None:
                return ran
        prepared = self._enter_prepared(name, bindings)
        control = CallControl(deadline)
        self._enter(name, control)
        done = threading.Event()

        def work() -> GuestRun:
            started = time.monotonic()
            try:
                with self.engine.slot():
                    return self._run_sync(prepared, arguments, mounts, limits, control, state)
            finally:
                self.engine.leave(control)
                done.set()
                if inline and time.monotonic() - started <= INLINE_BUDGET:
                    self._slow.discard(prepared.key)

        try:
            run = await self.engine.threads.run(work)
        except anyio.get_cancelled_exc_class():
            control.stop("cancelled")
            with anyio.CancelScope(shield=True):
                await run_in_worker(lambda: done.wait(CANCEL_WAIT))
            raise
        return outcome(run, timeout)

    def run_now(
        self,
        name: str,
        arguments: bytes,
        limits: GuestLimits,
        *,
        bindings: Sequence[HostBinding] = (),
        state: CallState | None = None,
        deadline: CallDeadline | None = None,
    ) -> ToolResult | None:
        """Run tool ``name`` on the calling thread if it finishes within
        :data:`INLINE_BUDGET`: its result or its ToolError; None when it did not run to its
        end here (no instance slot was free, or it overran the budget -- then it was stopped
        at the next epoch tick -- or its last run did), so the caller runs it the usual way.

        The caller vouches for what :meth:`run`'s ``inline=True`` says, and grants no
        mounts. ``deadline`` is the call's (the pipeline's, which runs no task for it): when it
        comes before the guest's own timeout, the guest is stopped inside wasmtime by then.
        """
        at, timeout = _deadline(limits.timeout)
        if deadline is not None and deadline.at < at:
            at, timeout = deadline.at, deadline.seconds
        prepared = self._enter_prepared(name, bindings)
        if prepared.key in self._slow:
            return None
        control = CallControl(at, overrun=time.monotonic() + INLINE_BUDGET)
        run = self._run_here(prepared, arguments, (), limits, control, state)
        if run is None:
            return None
        if run.stopped == OVERRAN:
            self._slow.add(prepared.key)
            return None
        return outcome(run, timeout)

    def run_sync(
        self,
        name: str,
        arguments: bytes,
        mounts: Sequence[GrantedMount],
        limits: GuestLimits,
        *,
        bindings: Sequence[HostBinding] = (),
        state: CallState | None = None,
    ) -> ToolResult:
        """:meth:`run` in the calling thread (benchmarks, synchronous embedders)."""
        deadline, timeout = _deadline(limits.timeout)
        prepared = self._enter_prepared(name, bindings)
        control = CallControl(deadline)
        self._enter(name, control)
        try:
            with self.engine.slot():
                run = self._run_sync(prepared, arguments, mounts, limits, control, state)
        finally:
            self.engine.leave(control)
        return outcome(run, timeout)

    def _enter_prepared(self, name: str, bindings: Sequence[HostBinding]) -> _Prepared:
        """The prepared module; refused once the engine is closed."""
        try:
            return self._prepared(name, bindings)
        except EngineClosedError:
            raise ToolCancelledError(f"Tool {name} was cancelled: the runtime is closed") from None

    def _enter(self, name: str, control: CallControl) -> None:
        """Count a run as started; refused once the engine is closed."""
        try:
            self.engine.enter(control)
        except EngineClosedError:
            raise ToolCancelledError(f"Tool {name} was cancelled: the runtime is closed") from None

    def _run_here(
        self,
        prepared: _Prepared,
        arguments: bytes,
        mounts: Sequence[GrantedMount],
        limits: GuestLimits,
        control: CallControl,
        state: CallState | None,
    ) -> GuestRun | None:
        """A counted run in the calling thread; None when no instance slot is free now."""
        engine = self.engine
        self._enter(prepared.key[0], control)
        try:
            if not engine.take_slot():
                return None
            try:
                return self._run_sync(prepared, arguments, mounts, limits, control, state)
            finally:
                engine.give_slot()
        finally:
            engine.leave(control)

    def _release(self) -> None:
        """Free the prepared and compiled modules (the engine is being released)."""
        with self._lock:
            pres, self._pres = list(self._pres.values()), {}
            modules = self._modules
        for prepared in pres:
            prepared.pre.close()
        if modules is not None:
            modules.close()

    def _run_sync(
        self,
        prepared: _Prepared,
        arguments: bytes,
        mounts: Sequence[GrantedMount],
        limits: GuestLimits,
        control: CallControl,
        state: CallState | None,
    ) -> GuestRun:
        """Run the guest in the calling thread, which holds an instance slot."""
        name = prepared.key[0]
        stdout = stderr = None
        if prepared.left is None:
            stdout = CappedOutput(limits.output_bytes)
            stderr = CappedOutput(max(4096, limits.output_bytes // 16))
        run = GuestRun(name, stdout, stderr, memory_limit=limits.memory_bytes)
        if control.should_stop():  # stopped while it waited for a slot
            run.failure, run.stopped = "stopped before it started", control.reason
            return run
        store = GuestStore(
            self.engine.engine, limits.memory_bytes, control.should_stop, STOP_MESSAGE
        )
        token = None
        if state is not None:
            state.landing.attach(control.landed)
            token = current_call.set(state)
        try:
            _set_wasi(store, name, arguments, mounts, stdout, stderr)
            _run_guest(name, store, prepared, run)
        finally:
            run.stopped = control.reason if run.failed else None
            if token is not None:
                current_call.reset(token)
            if state is not None:
                state.release()  # what host functions opened for the call
            # The store (its memory, descriptors and pool slot) goes now, not when the
            # last reference to an exception or frame that saw it is dropped.
            store.close()
        return run


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A tool's module, linked with its granted bindings and pre-instantiated."""

    key: tuple[str, tuple[str, ...]]
    """The tool's name and the names of its granted bindings."""
    pre: wasmtime.InstancePre
    left: bytes | None
    """The export through which the module hands over what it left in memory (one of
    :data:`RESULT_EXPORTS`); None when it has neither: then it reads its arguments from
    stdin (or argv) and prints its result, so its stdio is connected. A module built with
    the SDK reads argv and leaves its result in memory: its stdio goes nowhere, which spares
    the Python callbacks wasmtime would make for every write and at the end of the run."""


def _deadline(timeout: float) -> tuple[float, float]:
    """When a new run must stop: its own timeout or the call's deadline, the earlier; and
    the timeout that stands for."""
    at = time.monotonic() + timeout
    deadline = claim_deadline()
    if deadline is not None and deadline.at < at:
        return deadline.at, deadline.seconds
    return at, timeout


def _run_guest(name: str, store: GuestStore, prepared: _Prepared, run: GuestRun) -> None:
    """Instantiate and run the guest in ``store``, noting in ``run`` how it ended."""
    instance = None
    try:
        instance = store.instantiate(prepared.pre)
        try:
            started = store.call(instance, b"_start")
        except wasmtime.ExitTrap as exc:
            if exc.code != 0:
                run.exit_code = exc.code
                return
            started = None
        if started is NOT_A_FUNCTION:
            raise UsageError(f"WASM tool {name} has no _start function (not a command)")
        left = prepared.left
        if left is not None:
            found = left_in_memory(store, instance, left)
            if left == REPLY:
                run.reply = found
            else:
                run.document = found
    except (wasmtime.WasmtimeError, wasmtime.Trap) as exc:
        run.failure = str(exc)  # plain text: the exception and its frames die here
        if instance is not None:
            run.memory_bytes = store.memory_size(instance)


def left_in_memory(store: GuestStore, instance: Instance, export: bytes) -> bytes | None:
    """What the guest left in linear memory, where its function ``export`` says (see
    toolcage.h), if it did that."""
    packed = store.call(instance, export, results=1)
    if not isinstance(packed, int) or packed == 0:
        return None
    return store.read_memory(instance, (packed >> 32) & 0xFFFFFFFF, packed & 0xFFFFFFFF)


def _set_wasi(
    store: GuestStore,
    name: str,
    arguments: bytes,
    mounts: Sequence[GrantedMount],
    stdout: CappedOutput | None,
    stderr: CappedOutput | None,
) -> None:
    # JSON text never holds a raw NUL, so it survives as a C string.
    argv = [name, arguments.decode("utf-8")] if arguments else [name]
    preopens = [(str(m.host), m.guest, m.writable) for m in mounts]
    config = None
    if stdout is not None and stderr is not None:
        config = wasmtime.WasiConfig()
        set_stdin_bytes(config, arguments)
        config.stdout_custom = stdout.write
        config.stderr_custom = stderr.write
    store.set_wasi(argv, preopens, config)
