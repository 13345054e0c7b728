"""Paths: what the operator's mounts expose, and the hostile-path corpus through the file tools.

Two halves. *Exposure* looks at each of the operator's real mount directories: one that
holds the config file, a secret's file, the state store, the audit log, the vault, the
system's own directories or the selftest's canary (in the temporary directory) hands them
to every tool it is granted to, whatever the path checks do -- a mount of ``/`` holds them
all. *Traversal* plants the corpus's traps (links out of the mount, link chains and loops,
a hard link to the canary, a FIFO) in each scratch mount and sends every path of
:func:`~._path_corpus.hostile_paths` through each file tool with ``Runtime.execute``, and
through ``attachment_save`` (with an attachment of the turn to overwrite what it reaches)
and ``send_media`` (with the recording channel, :class:`~._recorder.Mailbox`): the canary's
text in any output or in a file sent to the channel, or any change beside the mounts, is an
escape.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from toolcage.policies import ToolcageConfig

from .._errors import ErrorKind
from .._runtime import Runtime
from .._tool import Attachment, ToolExecutionContext
from ._base import AttackContext, Outcome
from ._path_corpus import ROOT, hostile_paths
from ._recorder import Mailbox
from ._report import Finding
from ._scratch import Scratch

FILE_TOOLS = ("file_read", "file_list", "file_search", "file_write", "file_edit", "file_delete")
PATH_TOOLS = (*FILE_TOOLS, "attachment_save", "send_media")
"""What the corpus goes through: the file tools, saving an attachment of the turn to a
path, and sending a file at a path through the host's channel."""
SYSTEM = (Path("/etc"), Path("/proc"), Path("/sys"), Path("/dev"), Path("/root"))


def exposure(config: ToolcageConfig, config_path: Path | None, scratch: Scratch) -> list[Finding]:
    """One finding per operator mount: held, or escaped naming what it holds."""
    sensitive = _sensitive(config, config_path, scratch)
    found = []
    for mount in scratch.mounts:
        fixed = mount.original.fixed
        held = [what for path, what in sensitive if _within(path, fixed)]
        found.append(
            Finding(
                "paths",
                f"mount {mount.area.guest}",
                "host data inside a mount",
                not held,
                f"{mount.key}.host = {str(mount.area.host)!r} holds {held[0]}" if held else "",
                "; ".join(held),
            )
        )
    return found


def _sensitive(
    config: ToolcageConfig, config_path: Path | None, scratch: Scratch
) -> list[tuple[Path, str]]:
    base = config.base_dir
    items = [(scratch.outside, f"the canary outside every mount ({scratch.outside})")]
    items += [(p, f"the system directory {p}") for p in SYSTEM]
    items.append((Path.home() / ".ssh", f"the ssh keys ({Path.home() / '.ssh'})"))
    if config_path is not None:
        items.append((config_path.resolve(), f"the config file ({config_path})"))
    for name, secret in config.secrets.items():
        if secret.from_file is not None:
            items.append(((base / secret.from_file).resolve(), f"secrets.{name}'s file"))
    state = config.state
    if state.enabled and (state.url is None or "://" not in state.url):
        db = (base / (state.url or ".toolcage/state.db")).resolve()
        items.append((db, f"the state store ({db})"))
    if state.vault.dir is not None:
        items.append(((base / state.vault.dir).resolve(), "the vault (state.vault.dir)"))
    if config.audit.path is not None:
        items.append(((base / config.audit.path).resolve(), "the audit log (audit.path)"))
    return items


def _within(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


async def attack(ctx: AttackContext) -> Outcome:
    """What each real mount exposes, then the corpus through the file tools."""
    found = exposure(ctx.config, ctx.config_path, ctx.scratch)
    outcome = await traversal(ctx.runtime, ctx.scratch, ctx.bait.mailbox, ctx.within_budget)
    outcome.findings[:0] = found
    return outcome


async def traversal(
    runtime: Runtime, scratch: Scratch, mailbox: Mailbox, within_budget: Callable[[], bool]
) -> Outcome:
    """The corpus through every tool of :data:`PATH_TOOLS` on every scratch mount; a tool
    of :func:`_plain` whose plain call fails on a mount granted to it is not run."""
    done = Outcome()
    found = done.findings
    corpus = hostile_paths()
    for mount in scratch.mounts:
        _plant(mount.scratch, scratch.outside)
        for name in PATH_TOOLS:
            if name not in runtime.registry or not within_budget():
                continue
            tool = runtime.registry.get(name, "default")
            path_args = sorted(getattr(tool, "path_arguments", {}))
            base = fill(dict(tool.schema().parameters), set(path_args), scratch.canary)
            context = _context(name, base)
            before, sent = snapshot(scratch.outside), len(mailbox.sent)
            leaks: list[str] = []
            for raw in corpus:
                path = raw.replace("/workspace", mount.area.guest).replace(ROOT, str(scratch.root))
                for arg in path_args:
                    args = {**base, **dict.fromkeys(path_args, "."), arg: path}
                    result = await runtime.execute(name, args, context)
                    carried = mailbox.carried(sent, scratch.canary)
                    sent = len(mailbox.sent)
                    if carried or scratch.canary in result.output_text:
                        leaks.append(repr(path))
            changed = snapshot(scratch.outside) != before
            detail = ", ".join(leaks[:3]) + (" changed the canary" if changed else "")
            found.append(
                Finding(
                    "paths",
                    f"{name} on {mount.area.guest}",
                    "path traversal, symlinks, hard links, encodings",
                    not leaks and not changed,
                    f"{mount.key}: {name} reached outside the mount" if leaks or changed else "",
                    detail,
                )
            )
            if changed:  # put the canary back for the next tool
                restore(scratch)
            failed = await _plain(runtime, name, mount.area.guest, mount.scratch, mailbox, context)
            if failed is not None:
                done.not_run.append(f"paths: {name} on {mount.area.guest}: {failed}")
    return done


async def _plain(
    runtime: Runtime,
    name: str,
    guest: str,
    directory: Path,
    mailbox: Mailbox,
    context: ToolExecutionContext | None,
) -> str | None:
    """The control of a tool whose effect no output shows: ``send_media`` sends a planted
    file that must reach the channel, ``attachment_save`` saves the attachment of the turn,
    which must land in the mount. ``None`` when it worked or the tool is refused the mount
    (then its attacks were refused for that alone, as a file tool's on a mount not granted
    to it), else why it failed."""
    if name == "send_media":
        token = "selftest-media-" + secrets.token_hex(8)
        (directory / "selftest-media.txt").write_text(token)
        sent = len(mailbox.sent)
        result = await runtime.execute(name, {"path": f"{guest}/selftest-media.txt"}, context)
        worked = mailbox.carried(sent, token)
    elif name == "attachment_save" and context is not None:
        (directory / "selftest-saved.txt").unlink(missing_ok=True)
        [attachment] = context.attachments
        args = {"attachment": attachment.name, "path": f"{guest}/selftest-saved.txt"}
        result = await runtime.execute(name, args, context)
        saved = directory / "selftest-saved.txt"
        worked = saved.exists() and saved.read_bytes() == attachment.data
    else:
        return None
    if worked or (result.error is not None and result.error.kind is ErrorKind.PERMISSION_DENIED):
        return None
    return f"a plain call failed ({result.output_text[:200]})"


def _context(name: str, base: dict[str, Any]) -> ToolExecutionContext | None:
    """The call's context: ``attachment_save`` gets an attachment of the turn (and leave
    to overwrite) that would replace whatever an escape reached; ``send_media`` a channel
    to send to, where the canary's bytes would arrive."""
    if name == "attachment_save":
        base["overwrite"] = True
        return ToolExecutionContext(
            attachments=(Attachment(base["attachment"], "text/plain", b"PWNED"),)
        )
    if name == "send_media":
        return ToolExecutionContext(channel_id="selftest")
    return None


def fill(parameters: dict[str, Any], path_args: set[str], canary: str) -> dict[str, Any]:
    """Values for the other required arguments that would act on the canary."""
    args: dict[str, Any] = {}
    properties: dict[str, Any] = parameters.get("properties", {})
    for name in parameters.get("required", []):
        kind = properties.get(name, {}).get("type")
        if name in path_args:
            continue
        if kind == "string":
            args[name] = canary[:12] if name not in ("content", "new_string") else "PWNED"
        elif kind == "integer":
            args[name] = 1
        elif kind == "boolean":
            args[name] = False
    return args


def _plant(directory: Path, outside: Path) -> None:
    """The corpus's traps in a scratch mount (see ``tests/adversarial/_tree.py``)."""
    (directory / "sub" / "deeper").mkdir(parents=True, exist_ok=True)
    links = {
        "escape": os.path.relpath(outside, directory),
        "escape_abs": str(outside),
        "chain1": "sub/chain2",
        "sub/chain2": "../chain3",
        "chain3": os.path.relpath(outside, directory),
        "loop_a": "loop_b",
        "loop_b": "loop_a",
        "self_loop": ".",
        "dir_escape": str(outside) + "/",
    }
    for name, target in links.items():
        with contextlib.suppress(FileExistsError):
            (directory / name).symlink_to(target)
    with contextlib.suppress(FileExistsError, OSError):
        os.link(outside / "secret.txt", directory / "hard_secret")
    with contextlib.suppress(FileExistsError):
        os.mkfifo(directory / "pipe")


def snapshot(directory: Path) -> dict[str, tuple[int, int, int]]:
    return {str(p): (s.st_mode, s.st_size, s.st_mtime_ns) for p, s in _walk(directory)}


def _walk(directory: Path) -> Iterator[tuple[Path, os.stat_result]]:
    yield directory, directory.lstat()
    for dirpath, dirnames, filenames in os.walk(directory):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            yield path, path.lstat()


def restore(scratch: Scratch) -> None:
    (scratch.outside / "secret.txt").unlink(missing_ok=True)
    (scratch.outside / "secret.txt").write_text(scratch.canary)
