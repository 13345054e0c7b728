"""Principals: one user's objects are never another user's, for every agent profile.

For each agent profile of the config (and ``default``, the agent of calls that name none),
two users of that agent in the same session id -- only the user differs -- go through
``Runtime.execute``: the owner makes an object holding a fresh token, reads it back (the
probe's control: if the owner cannot, the class could not run), and the stranger looks for
it. What the product keeps per user is probed wherever the agent has the tools:

- memory notes (``memory_save`` / ``memory_search``), a scratchpad (``scratchpad_write`` /
  ``scratchpad_read``) and schedules (``schedule_create`` / ``schedule_search``): always
  the user's own, whatever the config says; an escape there is a defect of toolcage, not of
  the config, and says so;
- files on each mount whose host names ``{user}`` (``file_write`` / ``file_read``,
  ``file_list``): the config made that area per user;
- the shell workspace, when the area at ``/workspace`` names ``{user}``: the shell runs
  in ``/workspace`` too, and a workspace without ``{user}`` hands one user's shell files
  to the next while the file tools keep them apart (``shell.workspace`` is blamed).

A shared mount on a config that names ``{user}`` nowhere is the operator's choice (one
directory for everyone, as SECURITY.md says), and is not attacked. Vault items belong to
the agents ``[state.vault] grants`` names, not to users; an agent's grant is the
operator's, so the vault is not probed here.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from toolcage.policies import Principal, ShellMode, ToolcageConfig
from toolcage.policies._host_template import HostTemplate

from .._runtime import Runtime
from .._tool import ToolExecutionContext
from ._base import AttackContext, Outcome
from ._report import Finding
from ._scratch import Scratch

OWNER, STRANGER = "selftest-ada", "selftest-bob"
SESSION = "selftest"
DEFECT = "toolcage kept {what} per user and still crossed (no config key shares it): a defect"
YEARLY = {"cadence_type": "cron", "cadence_value": "0 0 1 1 *"}
STATE: dict[str, tuple[str, dict[str, object], str, dict[str, object]]] = {
    "memory notes": ("memory_save", {"content": "note {q} {t}"}, "memory_search", {"query": "{q}"}),
    "a scratchpad": ("scratchpad_write", {"items": ["{t}"]}, "scratchpad_read", {}),
    "schedules": ("schedule_create", {"goal": "check {q} {t}", **YEARLY}, "schedule_search", {}),
}
"""What is kept per user whatever the config: (make, its arguments, look, its arguments),
``{t}`` the token looked for in answers, ``{q}`` a word asked for (see :func:`_fill`)."""


class ControlFailed(Exception):
    """The owner could not read back her own object: the class could not run."""


Look = tuple[str, dict[str, object]]


def per_user_areas(config: ToolcageConfig) -> list[int]:
    """The indexes of the mount areas whose host names ``{user}``."""
    return [
        i
        for i, area in enumerate(config.mounts.effective_areas)
        if "user" in HostTemplate.parse(area.host).names
    ]


def _per_user_workspace_area(config: ToolcageConfig) -> int | None:
    """The index of the area mounted at ``/workspace`` when its host names ``{user}``: the
    file tools' ``/workspace`` is then each user's, and the shell's ``/workspace`` ought to
    be too (a shared area at ``/workspace`` shared with the shell is the operator's choice)."""
    for i in per_user_areas(config):
        if config.mounts.effective_areas[i].guest == "/workspace":
            return i
    return None


def skip_reason(config: ToolcageConfig, runtime: Runtime) -> str | None:
    """Why there is nothing kept per user to attack, or ``None``."""
    kept = ("memory_search", "scratchpad_read", "schedule_search")
    if any(t in runtime.registry for t in kept) or per_user_areas(config):
        return None
    return "nothing is kept per user (no state tools, no mount naming {user})"


def context(user: str, agent: str) -> ToolExecutionContext:
    return ToolExecutionContext(
        principal=Principal(user_id=user, agent_id=agent, session_id=SESSION, channel_id=SESSION)
    )


async def attack(ctx: AttackContext) -> Outcome:
    """Every probe; a failed control (:class:`ControlFailed`) makes the class not run and
    drops its findings."""
    try:
        return Outcome(await _attack(ctx.runtime, ctx.config, ctx.scratch, ctx.within_budget))
    except ControlFailed as exc:
        return Outcome(not_run=[f"principals: {exc}"])


async def _attack(
    runtime: Runtime, config: ToolcageConfig, scratch: Scratch, within_budget: Callable[[], bool]
) -> list[Finding]:
    """One finding per agent and kind of per-user object; :class:`ControlFailed` when an
    owner cannot read her own."""
    found: list[Finding] = []
    for agent in ("default", *config.agents):
        if not within_budget():
            break

        def can(*tools: str, agent: str = agent) -> bool:
            return all(runtime.registry.is_enabled(t, agent) for t in tools)

        def finding(what: str, crossed: bool, key: str, detail: str, agent: str = agent) -> Finding:
            target = f"agent {agent}: {STRANGER} after {OWNER}"
            return Finding("principals", target, what, not crossed, key if crossed else "", detail)

        for what, (make, made_args, look, look_args) in STATE.items():
            if can(make, look):
                token, query = _token(), _token()
                crossed = await _owned(
                    runtime,
                    agent,
                    (make, _fill(made_args, token, query)),
                    (look, _fill(look_args, token, query)),
                    token,
                )
                detail = f"{look} as {STRANGER} showed {OWNER}'s {token}" if crossed else ""
                found.append(
                    finding(f"{what} of another user", crossed, DEFECT.format(what=what), detail)
                )
        for i in per_user_areas(config):
            if can("file_read"):
                seen = await _files(runtime, agent, scratch, i)
                if seen is not None:
                    key = f"mounts.areas.{i} names {{user}}, yet " + DEFECT.format(what="its files")
                    guest = scratch.mounts[i].area.guest
                    detail = f"{STRANGER} read or listed a file of {OWNER}'s {guest}"
                    found.append(finding(f"files on {guest}", seen, key, detail))
        mirrored = _per_user_workspace_area(config)
        if mirrored is not None and config.shell.mode is ShellMode.SANDBOXED and can("shell_exec"):
            crossed = await _shell(runtime, agent)
            workspace = config.shell.workspace
            if "user" in HostTemplate.parse(workspace).names:
                key = "shell.workspace names {user}, yet " + DEFECT.format(what="its files")
            else:
                key = (
                    f"shell.workspace = {str(workspace)!r} lacks {{user}} while "
                    f"mounts.areas.{mirrored} keeps /workspace per user: {OWNER}'s shell "
                    f"files are {STRANGER}'s"
                )
            detail = f"`ls` as {STRANGER} listed the file `touch` made as {OWNER}"
            found.append(finding("the shell workspace", crossed, key, detail))
    return found


def _token() -> str:
    return "selftest" + secrets.token_hex(8)


def _fill(args: dict[str, object], token: str, query: str) -> dict[str, object]:
    """``args`` with ``{t}`` (the token looked for in answers) and ``{q}`` (the word asked
    for, never the token: an error that echoes the question must not count as a leak)."""

    def one(value: object) -> object:
        if isinstance(value, str):
            return value.replace("{t}", token).replace("{q}", query)
        if isinstance(value, list):
            return [one(v) for v in value]
        return value

    return {k: one(v) for k, v in args.items()}


async def _text(runtime: Runtime, user: str, agent: str, look: Look) -> str:
    tool, args = look
    return (await runtime.execute(tool, args, context(user, agent))).output_text


async def _owned(runtime: Runtime, agent: str, make: Look, look: Look, token: str) -> bool:
    """The owner makes the object and finds it; then whether the stranger finds it too."""
    tool, args = make
    made = await runtime.execute(tool, args, context(OWNER, agent))
    if made.is_error:
        raise ControlFailed(f"{tool} as {OWNER} through agent {agent}: {made.output_text[:200]}")
    if token not in await _text(runtime, OWNER, agent, look):
        raise ControlFailed(f"{look[0]} as {OWNER} through agent {agent} did not find her own")
    return token in await _text(runtime, STRANGER, agent, look)


async def _files(runtime: Runtime, agent: str, scratch: Scratch, index: int) -> bool | None:
    """A file planted in the owner's directory of area ``index``: whether the stranger
    reads or lists it (``None``: ``file_read`` is not granted the area)."""
    area = scratch.config.mounts.effective_areas[index]
    template = HostTemplate.parse(area.host)
    owner = context(OWNER, agent).principal
    directory = template.path(template.segments(owner))
    token, name = _token(), _token() + ".txt"  # the name is asked for, the token is not
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    (directory / name).write_text(token)
    path = f"{area.guest}/{name}"
    mine = await runtime.execute("file_read", {"path": path}, context(OWNER, agent))
    if mine.error is not None and mine.error.kind.value == "permission_denied":
        return None
    if token not in mine.output_text:
        raise ControlFailed(f"file_read of {path} as {OWNER} failed: {mine.output_text[:200]}")
    theirs = await _text(runtime, STRANGER, agent, ("file_read", {"path": path}))
    listed = ""
    if runtime.registry.is_enabled("file_list", agent):
        listed = await _text(runtime, STRANGER, agent, ("file_list", {"path": area.guest}))
    return token in theirs or name in listed


async def _shell(runtime: Runtime, agent: str) -> bool:
    """A file the owner's shell makes: whether the stranger's shell lists it."""
    token = _token()
    made = await runtime.execute("shell_exec", {"command": f"touch {token}"}, context(OWNER, agent))
    if made.is_error:
        raise ControlFailed(f"shell_exec `touch` as {OWNER}: {made.output_text[:200]}")
    if token not in await _text(runtime, OWNER, agent, ("shell_exec", {"command": "ls"})):
        raise ControlFailed(f"shell_exec `ls` as {OWNER} did not list her own file")
    return token in await _text(runtime, STRANGER, agent, ("shell_exec", {"command": "ls"}))
