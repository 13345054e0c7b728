"""The capabilities as interfaces of the ``toolcage:tool@0.1.0`` world, for components.

An operator's tool built as a WebAssembly component (``wasm_tools/python/wit/tool.wit``)
imports each capability it was granted as one interface, ``toolcage:tool/NAME@0.1.0``,
whose functions take and return component values (strings, byte lists, options) instead
of pointers into linear memory. They are thin adapters over the C guests' bindings and
their policies, not second implementations:

- ``fs`` resolves a path with the call's :class:`~._fs_files.CallFiles` (the mounts of the
  call's tool, tier and principal, longest guest path first) and opens it with
  ``openat2(RESOLVE_BENEATH)`` (:mod:`._beneath`), as ``toolcage_fs_v1`` does; only
  regular files are read, and a listing is the one of ``list``;
- ``http`` hands the JSON request to the granted :class:`~._http.HttpBinding` (the egress
  policy, secrets and byte quotas; a worker's reading form sends only ``GET``/``HEAD``);
- ``clock`` answers as ``toolcage_clock_v1.now``; ``log`` and ``progress`` go to the call's
  logger and progress callback with the C bindings' caps;
- the state relays (``memory``, ``scratchpad``, ``scheduler``) have one function,
  ``call(name, request)``, answered by the binding's own JSON call of that name (its
  :meth:`~._relay.Relayable.calls`: the calls of the form granted, so a worker's
  ``memory`` answers ``search`` alone), with the call's principal from its
  :class:`~._base.CallState`, never from the guest.

Host functions run in the guest's thread with the call's :data:`~._base.current_call`
set. A failure the tool should see is an ``err`` (or an ``"ok": false`` document); an
unexpected one is logged and reported as an ``err`` too, never a trap of the host.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable
from typing import Any

from wasmtime.component import LinkerInstance

from ._abi import GuestError, call_state, failed
from ._base import HostBinding
from ._beneath import WASI, open_beneath, read_into, wasi_errno
from ._clock import now_in
from ._fs_files import ENTRY, HOW_DIR, HOW_FILE, FsError, call_files, listing, regular
from ._http import HttpBinding
from ._progress import LEVELS, MAX_MESSAGE_BYTES
from ._relay import Relayable

PACKAGE = "toolcage:tool"
VERSION = "0.1.0"
MAX_READ_BYTES = 64 << 20
"""The most one ``fs.read-file`` returns, whatever ``max-bytes`` asks."""
MAX_ENTRIES = 100_000
"""The most names one ``fs.list-dir`` returns; a larger directory is an ``err``."""
STATE_RELAYS = frozenset({"memory", "scratchpad", "scheduler"})
"""The capabilities offered as ``call(name, request)`` over their JSON calls."""
COMPONENT_CAPABILITIES = frozenset({"fs", "http", "clock", "log", "progress"}) | STATE_RELAYS
"""The capabilities the ``toolcage:tool`` world offers as interfaces."""

_log = logging.getLogger("toolcage.host_bindings")
_ERRNO_NAMES = {number: name for name, number in WASI.items()}
_REASONS = {
    "NOTCAPABLE": "outside the granted mounts",
    "NOENT": "no such file or directory",
    "ISDIR": "is a directory",
    "NOTDIR": "not a directory",
    "NXIO": "not a regular file",
    "ACCES": "permission denied",
    "LOOP": "too many links",
    "INVAL": "not a valid path",
}


def interface(capability: str) -> str:
    """The name of ``capability``'s interface, as a component imports it."""
    return f"{PACKAGE}/{capability}@{VERSION}"


def _reason(exc: Exception, path: str) -> str:
    code = exc.errno if isinstance(exc, FsError) else wasi_errno(exc)  # type: ignore[arg-type]
    name = _ERRNO_NAMES.get(code, "IO")
    return f"{path[:200]}: {_REASONS.get(name, 'cannot be read')} (E{name})"


def _as_document(reason: str) -> str:
    return json.dumps(failed("execution_error", reason))


def _shielded(
    what: str, func: Callable[..., Any], answer: Callable[[str], Any] = str
) -> Callable[..., Any]:
    """``func`` whose unexpected failure is logged and ``answer``-ed: an ``err`` text, or
    for the interfaces that answer JSON an ``"ok": false`` document."""

    def run(store: object, *args: Any) -> Any:
        del store
        try:
            return func(*args)
        except GuestError:
            return answer("called outside a tool call")
        except Exception:
            _log.exception(
                "host function %s failed", what, extra={"event": "binding.crash", "function": what}
            )
            return answer("the host failed unexpectedly")

    return run


def _read_file(path: str, max_bytes: int) -> bytes | str:
    files = call_files(call_state())
    try:
        root, rel = files.locate(path.encode("utf-8", "surrogateescape"))
        fd = open_beneath(root, rel, HOW_FILE)
        try:
            size = regular(fd).st_size
            cap = max(0, min(max_bytes, MAX_READ_BYTES, size))
            buffer = bytearray(cap)
            n = read_into(fd, memoryview(buffer), 0, cap, size)
        finally:
            os.close(fd)
    except (FsError, OSError) as exc:
        return _reason(exc, path)
    return bytes(buffer[:n])


def _list_dir(path: str) -> list[str] | str:
    files = call_files(call_state())
    try:
        root, rel = files.locate(path.encode("utf-8", "surrogateescape"))
        fd = open_beneath(root, rel, HOW_DIR)
        try:
            data = listing(fd, False)
        finally:
            os.close(fd)
    except (FsError, OSError) as exc:
        return _reason(exc, path)
    names: list[str] = []
    at = 0
    while at < len(data):
        if len(names) == MAX_ENTRIES:
            return f"{path[:200]}: holds more than {MAX_ENTRIES} entries"
        _, length, _ = ENTRY.unpack_from(data, at)
        at += ENTRY.size
        names.append(data[at : at + length].decode("utf-8"))
        at += length
    return sorted(names)


def _http(binding: HttpBinding) -> Callable[[str], str]:
    def request(text: str) -> str:
        try:
            req = json.loads(text)
        except json.JSONDecodeError as exc:
            req = exc
        if not isinstance(req, dict):
            answer = failed("validation_error", "the request must be a JSON object")
        else:
            answer = binding.answer(call_state(), req)
        return json.dumps(answer, ensure_ascii=False)

    return request


def _relay(binding: Relayable) -> Callable[[str, str], str]:
    def call(name: str, text: str) -> str:
        handler = binding.calls().get(name)
        try:
            req = json.loads(text) if text else {}
        except json.JSONDecodeError:
            req = None
        if handler is None:
            known = ", ".join(sorted(binding.calls()))
            answer = failed("validation_error", f"{binding.name} has no call {name[:80]!r} here"
                            f" (it answers {known})")  # fmt: skip
        elif not isinstance(req, dict):
            answer = failed("validation_error", "the request must be a JSON object")
        else:
            answer = handler(call_state(), req)
        return json.dumps(answer, ensure_ascii=False)

    return call


def _now(timezone: str | None) -> str:
    return json.dumps(now_in(timezone))


def _write(level: str, message: str) -> None:
    call_state().log(level if level in LEVELS else "info", message[:MAX_MESSAGE_BYTES])


def _report(message: str, fraction: float | None) -> None:
    known = fraction is not None and 0.0 <= fraction <= 1.0 and not math.isnan(fraction)
    call_state().progress(message[:MAX_MESSAGE_BYTES], fraction if known else None)


def _silent(func: Callable[..., None]) -> Callable[..., None]:
    """``func`` for a function without a result: a failure is logged, never returned."""
    shielded = _shielded(func.__name__, func)

    def run(store: object, *args: Any) -> None:
        shielded(store, *args)

    return run


def _functions(binding: HostBinding) -> dict[str, Callable[..., Any]]:
    capability = binding.name.partition(":")[0]  # "http:read" is a form of "http"
    if capability == "fs":
        return {
            "read-file": _shielded("fs.read-file", _read_file),
            "list-dir": _shielded("fs.list-dir", _list_dir),
        }
    if capability == "http" and isinstance(binding, HttpBinding):
        return {"request": _shielded("http.request", _http(binding), _as_document)}
    if capability == "clock":
        return {"now": _shielded("clock.now", _now, _as_document)}
    if capability == "log":
        return {"write": _silent(_write)}
    if capability == "progress":
        return {"report": _silent(_report)}
    if capability in STATE_RELAYS and isinstance(binding, Relayable):
        return {"call": _shielded(f"{capability}.call", _relay(binding), _as_document)}
    raise ValueError(f"capability {binding.name!r} has no interface in {PACKAGE}@{VERSION}")


def define_interface(root: LinkerInstance, binding: HostBinding) -> None:
    """Define ``binding``'s interface in a component linker's ``root``."""
    functions = _functions(binding)
    with root.add_instance(interface(binding.name.partition(":")[0])) as instance:
        for name, func in functions.items():
            instance.add_func(name, func)
