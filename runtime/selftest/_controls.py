"""Controls: one harmless call per attack class that must succeed before the class attacks.

An attack *holds* when it is refused, and a runtime that refuses everything -- a guest that
does not instantiate, a sidecar that does not start, a store that does not open -- would
refuse every attack too. So before a class attacks, it makes one call that must work under
any config that has the class at all: read a file planted in a scratch mount, send a request
to the recording listener (reached, or refused by the egress policy itself and not by
anything else), run ``echo`` in the shell, ask a secret's binding about its own host (the
principals class controls each probe itself: the owner reads back her own object). A
control that fails means the class *could not run*, reported with the reason, and the run
does not pass.

A class the config has nothing of is *skipped* with the reason instead (no file tool, no
network tool, ``shell.mode = "disabled"``, no secret): there is nothing there to escape
through, so it neither fails nor counts as held.
"""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

from toolcage.policies import ShellMode

from .._runtime import Runtime
from . import _principals
from ._base import AttackContext
from ._paths import FILE_TOOLS
from ._scratch import Scratch
from ._ssrf import NETWORK_TOOLS, Listener

CONTROL_FILE = "selftest-control.txt"
"""The file the paths control plants in every scratch mount."""


def no_file_tool(ctx: AttackContext) -> str | None:
    """Skip check of ``paths`` and ``races``."""
    if not any(t in ctx.runtime.registry for t in FILE_TOOLS):
        return "no file tool is registered"
    return None


def no_network_tool(ctx: AttackContext) -> str | None:
    """Skip check of ``ssrf``."""
    if not any(t in ctx.runtime.registry for t in NETWORK_TOOLS):
        return f"no network tool is registered ({', '.join(NETWORK_TOOLS)})"
    return None


def no_shell(ctx: AttackContext) -> str | None:
    """Skip check of ``shell``."""
    if ctx.config.shell.mode is ShellMode.DISABLED:
        return 'shell.mode = "disabled": there is no shell to attack'
    if "shell_exec" not in ctx.runtime.registry:
        return "shell_exec is not registered"
    return None


def no_secret(ctx: AttackContext) -> str | None:
    """Skip check of ``secrets``."""
    return None if ctx.config.secrets else "the config binds no secret"


def nothing_per_user(ctx: AttackContext) -> str | None:
    """Skip check of ``principals``."""
    return _principals.skip_reason(ctx.config, ctx.runtime)


async def files(ctx: AttackContext) -> str | None:
    """Control of ``paths`` and ``races``."""
    return await _paths(ctx.runtime, ctx.scratch)


async def network(ctx: AttackContext) -> str | None:
    """Control of ``ssrf``."""
    return await _ssrf(ctx.runtime)


async def shell(ctx: AttackContext) -> str | None:
    """Control of ``shell``."""
    return await _shell(ctx.runtime, ctx.scratch)


async def secret_bindings(ctx: AttackContext) -> str | None:
    """Control of ``secrets``."""
    return _secrets(ctx.scratch)


async def in_each_probe(ctx: AttackContext) -> str | None:
    """Control of ``principals``: each probe controls itself (the owner reads back her own
    object, else the probe raises :class:`~._principals.ControlFailed`)."""
    del ctx
    return None


async def _paths(runtime: Runtime, scratch: Scratch) -> str | None:
    """A planted file read back (``file_read``) or listed (``file_list``) in some mount."""
    token = "selftest-control-" + secrets.token_hex(8)
    for mount in scratch.mounts:
        (mount.scratch / CONTROL_FILE).write_text(token)
    tool = "file_read" if "file_read" in runtime.registry else "file_list"
    if tool not in runtime.registry:
        return None  # only writing tools: their attacks need no read to be judged
    expected = token if tool == "file_read" else CONTROL_FILE
    why = "no mount"
    for mount in scratch.mounts:
        path = mount.area.guest + ("/" + CONTROL_FILE if tool == "file_read" else "")
        result = await runtime.execute(tool, {"path": path})
        if not result.is_error and expected in result.output_text:
            return None
        why = result.output_text[:200] if result.is_error else "the answer lacked the file"
    return f"{tool} found a planted file in no mount ({why})"


async def _ssrf(runtime: Runtime) -> str | None:
    """A request to the listener: it arrives, or the egress policy refuses it."""
    tool = next(t for t in NETWORK_TOOLS if t in runtime.registry)
    listener = Listener()
    try:
        url = f"http://127.0.0.1:{listener.port}/selftest-control"
        result = await runtime.execute(tool, {"url": url})
    finally:
        listener.close()
    if listener.hits or (result.is_error and "egress policy" in result.output_text):
        return None
    host = urlsplit(url).netloc
    why = result.output_text[:200]
    return f"{tool} to {host} neither arrived nor met the egress policy ({why})"


async def _shell(runtime: Runtime, scratch: Scratch) -> str | None:
    """``echo`` in the shell, its word in the output."""
    if scratch.config.shell.mode is ShellMode.HOST:
        return None  # an escape by itself; nothing is run there
    token = "selftest-control-" + secrets.token_hex(8)
    result = await runtime.execute("shell_exec", {"command": f"echo {token}"})
    if not result.is_error and token in result.output_text:
        return None
    return f"shell_exec `echo` failed ({result.output_text[:200]})"


def _secrets(scratch: Scratch) -> str | None:
    """Each secret's binding says yes to a request to its own first host (on its own port,
    path and method): a binding that never applies would hold against everything."""
    for name, secret in scratch.config.secrets.items():
        entry = secret.hosts[0].lower()
        host, _, port = entry.partition(":")
        host = host.replace("*", "selftest-control") if host != "*" else "example.com"
        scheme = secret.schemes[0]
        default = 443 if scheme == "https" else 80
        number = int(port) if port.isdigit() else default
        path = secret.paths[0] if secret.paths else "/"
        method = secret.methods[0] if secret.methods else "GET"
        if not secret.applies(scheme, host, number, path, method):
            return f"secrets.{name} is not sent even to its own host {entry}"
    return None
