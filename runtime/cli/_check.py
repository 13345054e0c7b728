"""``toolcage check``: is this machine ready to run this config?

Each check prints one line -- ``ok``, ``FAIL`` or ``skip``, its name, what it found, and
for a failure what to do about it -- in the order a call would meet them:

``config``
    the file loads and fits the runtime (``Runtime.from_config``);
``mcp``
    (only with ``[[mcp.servers]]``) every server started and listed its tools (one that did
    not is named with why: its exit status, command and the tail of its stderr);
``guests``
    every guest tool's module is built, compiles and links with the bindings it is granted;
``bubblewrap``
    ``bwrap`` is installed and can start a trivial sandbox (sandboxed shell only);
``sidecar``
    the shell daemon starts -- which means its own sandbox ran ``true``;
``workspace``
    the uid commands run as (``shell.sandbox_uid`` when the sidecar runs as root) can write
    to the workspace, as the sidecar found from inside its sandbox (a workspace naming the
    principal: the directory each principal's is made in exists; the sidecar makes each for
    that uid);
``egress``
    the egress rules of every tool resolve, and the search provider is described;
``state``
    the state store opens (the embedded one is created) and its schema is current, SQLite's
    ``PRAGMA quick_check`` finds the embedded file whole, and the embedder and the vault are
    described (skipped with ``[state] enabled = false``). A failure names its cause (a full
    or read-only file system, a directory the runtime cannot write, damage, a schema
    written by a newer toolcage) and its fix.

The exit status is 0 only when no check failed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Literal, TextIO

import anyio
from toolcage.host_bindings import StateServices, StoreError
from toolcage.host_bindings._backends._sqlite_causes import recovery
from toolcage.host_bindings._store import StateStore
from toolcage.host_bindings._store._sqlite import EmbeddedStore
from toolcage.policies import ConfigError, EgressPolicy, HostTemplate, ShellMode

from .._errors import ToolError, UsageError
from .._runtime import Runtime
from ..shell import ShellExecTool, call_sidecar
from ..wasm import LinkError, WasmTool

BWRAP_PROBE = ("--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true")
"""A sandbox that shares nothing with the host but a read-only view of it."""
PROBE_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The verdict of one check."""

    name: str
    status: Literal["ok", "FAIL", "skip"]
    found: str
    """What the check saw."""
    fix: str = ""
    """What to do about a failure."""

    def line(self) -> str:
        """The printed line; undecodable bytes of a path show as escapes."""
        fix = f"; to fix: {self.fix}" if self.fix else ""
        text = f"{self.status:<5} {self.name:<10} {self.found}{fix}"
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


async def run_checks(config_path: str | None, sink: TextIO) -> int:
    """Print every check's line to ``sink``; 0 when none failed, else 1."""
    failed = False
    async for result in checks(config_path):
        failed = failed or result.status == "FAIL"
        sink.write(result.line() + "\n")
        sink.flush()
    return 1 if failed else 0


async def checks(config_path: str | None) -> AsyncIterator[CheckResult]:
    """The checks of the module docstring, each as soon as it is done."""
    try:
        runtime = Runtime.from_config(config_path)
    except (ConfigError, UsageError) as exc:
        yield CheckResult("config", "FAIL", str(exc), "correct the file or the key it names")
        for name in ("guests", "bubblewrap", "sidecar", "workspace", "egress", "state"):
            yield CheckResult(name, "skip", "the config did not load")
        return
    source = config_path or "the built-in default config"
    yield CheckResult("config", "ok", f"{source}: {len(runtime.registry)} tools")
    async with runtime:
        if runtime.config.mcp.servers:
            yield _mcp(runtime)
        yield await anyio.to_thread.run_sync(_guests, runtime)
        shell = runtime.config.shell
        if shell.mode is ShellMode.DISABLED:
            for name in ("bubblewrap", "sidecar", "workspace"):
                yield CheckResult(name, "skip", 'the shell is disabled (shell.mode = "disabled")')
        else:
            if shell.mode is ShellMode.SANDBOXED:
                yield await anyio.to_thread.run_sync(_bubblewrap)
            else:
                yield CheckResult("bubblewrap", "skip", 'shell.mode = "host" runs no sandbox')
            async for result in _sidecar(runtime):
                yield result
        yield _egress(runtime)
        yield await anyio.to_thread.run_sync(_state, runtime)


def _mcp(runtime: Runtime) -> CheckResult:
    servers = runtime.config.mcp.servers
    withheld = runtime.registry.withheld()
    if withheld:
        return CheckResult(
            "mcp",
            "FAIL",
            f"{len(withheld)} of {len(servers)} servers not available: "
            + " || ".join(why.message for _, why in withheld),
            "follow the reason above; the server's command, its interpreter and their "
            "libraries must lie in /usr or a granted directory its uid can read",
        )
    counts = {server.name: 0 for server in servers}
    for tool in runtime.registry:
        for name in counts:
            if tool.schema().name.startswith(f"{name}__"):
                counts[name] += 1
    listed = ", ".join(f"{name} ({count} tools)" for name, count in counts.items())
    return CheckResult("mcp", "ok", f"every server started and listed its tools: {listed}")


def _guests(runtime: Runtime) -> CheckResult:
    guests = [tool for tool in runtime.registry if isinstance(tool, WasmTool)]
    problems: dict[str, list[str]] = {}
    withheld: list[str] = []
    for tool in guests:
        try:
            tool.runner.prepare(tool.name, tool.bindings)
        except LinkError:
            withheld.append(tool.name)  # [egress.grants] took a binding away on purpose
        except Exception as exc:  # a missing, stale or broken module, whatever wasmtime says
            reason = str(exc).strip().splitlines()[0].split("; run ")[0]
            problems.setdefault(reason.replace(tool.name, "NAME"), []).append(tool.name)
    if problems:
        found = "; ".join(f"{', '.join(names)}: {reason}" for reason, names in problems.items())
        return CheckResult(
            "guests",
            "FAIL",
            found,
            "build the guest tools (make wasm, or python -m toolcage.wasm_tools.build)",
        )
    found = f"{len(guests)} guest modules compiled and linked"
    if withheld:
        found += f" (not linkable, bindings withheld by [egress.grants]: {', '.join(withheld)})"
    return CheckResult("guests", "ok", found)


def _bubblewrap() -> CheckResult:
    bwrap = shutil.which("bwrap")
    install = "install the 'bubblewrap' package (make system-deps)"
    if bwrap is None:
        return CheckResult("bubblewrap", "FAIL", "bwrap is not on PATH", install)
    try:
        done = subprocess.run(  # noqa: S603 - bwrap from PATH, fixed arguments
            [bwrap, *BWRAP_PROBE],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=PROBE_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return CheckResult("bubblewrap", "FAIL", f"{bwrap} did not run: {exc}", install)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return CheckResult(
            "bubblewrap",
            "FAIL",
            f"{bwrap} cannot start a sandbox: {reason}",
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
            "or kernel.apparmor_restrict_unprivileged_userns=0), or in a container run it "
            "with a seccomp profile that permits them",
        )
    return CheckResult("bubblewrap", "ok", f"{bwrap} runs a sandbox")


async def _sidecar(runtime: Runtime) -> AsyncIterator[CheckResult]:
    tool = next((t for t in runtime.registry if isinstance(t, ShellExecTool)), None)
    if tool is None or tool.sidecar is None:
        yield CheckResult("sidecar", "skip", "this runtime has no shell")
        yield CheckResult("workspace", "skip", "this runtime has no shell")
        return
    if not tool.template.fixed.exists():
        tool.template.make_fixed()  # as the first command would
    try:
        answer = await call_sidecar(tool.sidecar, "ping", {}, PROBE_SECONDS)
    except ToolError as exc:
        yield CheckResult(
            "sidecar",
            "FAIL",
            exc.message,
            "follow the reason above; `toolcage sidecar --config FILE --socket PATH` runs the "
            "daemon in the foreground with its log on stderr",
        )
        yield CheckResult("workspace", "skip", "the shell daemon did not start")
        return
    yield CheckResult("sidecar", "ok", "the shell daemon started and ran `true` in its sandbox")
    yield _workspace(runtime, tool.template, answer.get("workspace_writable"))


def _workspace(runtime: Runtime, template: HostTemplate, writable: object) -> CheckResult:
    """Whether commands may write in the workspace, as the sidecar found by asking the
    kernel from inside its sandbox when it started (``test -w``: modes, owners, ACLs and
    the uid commands run as all count). A workspace per principal is made by the sidecar
    for that uid on its first command: only the directory they are made in is looked at."""
    sandboxed_root = os.geteuid() == 0 and runtime.config.shell.mode is ShellMode.SANDBOXED
    uid = runtime.config.shell.sandbox_uid if sandboxed_root else os.geteuid()
    workspace = template.fixed
    if template.per_principal:
        if not workspace.is_dir():
            return CheckResult(
                "workspace", "FAIL", f"{workspace} is not a directory", "remove or replace it"
            )
        return CheckResult(
            "workspace",
            "ok",
            f"each principal's workspace ({template}) is made on its first command, for uid {uid}",
        )
    if writable is not True:
        return CheckResult(
            "workspace",
            "FAIL",
            f"commands run as uid {uid} cannot write to {workspace}",
            f"chown -R {uid} {workspace} (or choose another shell.sandbox_uid)",
        )
    return CheckResult("workspace", "ok", f"commands run as uid {uid} can write to {workspace}")


def _egress(runtime: Runtime) -> CheckResult:
    try:
        policy = EgressPolicy(runtime.config.egress)
        for tool in runtime.registry:
            policy.rules_for(tool.schema().name)
    except ValueError as exc:
        return CheckResult("egress", "FAIL", str(exc), "correct the [egress] section")
    rules = policy.rules_for("")
    hosts = ", ".join(rules.allow_hosts) if rules.allow_hosts else "any public host"
    private = "private addresses refused" if rules.block_private else "private addresses allowed"
    if rules.private_exceptions:
        private += f" except {', '.join(rules.private_exceptions)}"
    search = policy.web_search.endpoint()
    searching = f"web_search via {search}" if search else "no web_search provider"
    return CheckResult("egress", "ok", f"{hosts}; {private}; {searching}")


def _state(runtime: Runtime) -> CheckResult:
    config = runtime.config
    if not config.state.enabled:
        return CheckResult(
            "state", "skip", "[state] enabled = false: no memory, scratchpad or vault"
        )
    services = StateServices(config.state, config.base_dir)
    try:
        damage = _damage(services.store)
        embedder = services.embedder
    except StoreError as exc:
        fix = exc.fix or "correct [state] url, or reach the server"
        return CheckResult("state", "FAIL", str(exc), fix)
    finally:
        services.close()
    if damage:
        path = config.state.embedded_path(config.base_dir)
        return CheckResult(
            "state",
            "FAIL",
            f"{services.url} is damaged: {_findings(damage)}",
            recovery(path),
        )
    search = f"hybrid search ({embedder.model})" if embedder else "keyword-only search"
    vault = f"vault {services.vault_dir}" if services.vault_dir else "no vault"
    return CheckResult("state", "ok", f"{services.url}; {search}; {vault}")


def _damage(store: StateStore) -> list[str]:
    """What SQLite's quick check finds wrong with an embedded store, which must also be
    writable (a server checks its own files)."""
    return store.checkup() if isinstance(store, EmbeddedStore) else []


def _findings(damage: list[str], shown: int = 3) -> str:
    """The first few of the quick check's findings, on one line."""
    lines = [" ".join(line.split()) for found in damage for line in found.splitlines()]
    lines = [line for line in lines if line and not line.startswith("***")]
    more = f" (and {len(lines) - shown} more)" if len(lines) > shown else ""
    return "; ".join(lines[:shown]) + more
