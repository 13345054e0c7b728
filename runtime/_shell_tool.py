"""``shell_exec`` and ``shell_job``: the shell, as tools, routed to the sidecar daemon.

``shell_exec`` is ``privileged``: it passes the approval gate like any privileged tool, then
the shell policy (a :class:`ShellPolicyCheck` among the runtime's security checks, and
again in the tool itself, so a tool used outside the pipeline is no weaker), and only then
reaches the sidecar -- which the client starts on first use and restarts after a crash.
The runtime's checks answer early; the sidecar checks every command again against the
same ``[shell]`` config, and its refusal (error code ``policy``) is a ``permission_denied``
too.
Each conversation (``ctx.session_id``) has its own shell sessions; ``session_id`` names
one of them, so a model can keep a build directory and a server directory apart. Every
request names the call's user and agent, so that a workspace naming the principal
(``[shell] workspace = "users/{user}/workspace"``) is the caller's own: the sidecar picks
and makes that directory itself (:mod:`toolcage.sidecar._workspaces`).

With ``[shell] mode = "disabled"``, ``shell_exec`` is still listed and answers every call
with ``permission_denied``, so a model learns the shell is off instead of that it is
missing.

A command's result carries ``details`` -- ``exit_code``, ``timed_out``, ``duration``,
``cwd``, ``stdout_bytes``, ``stderr_bytes``, and ``signal`` when the exit code says a signal
ended it (the shell's 128 + N) -- and a display line: ``Ran `make test` (exit 0, 1.20 s)``.
A background command's details are ``{job_id, background, cwd}``; ``shell_job``'s are
``{job_id, running, exit_code}``.
"""

from __future__ import annotations

import hashlib
import os
import signal
from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from toolcage.policies import (
    HostTemplate,
    ShellConfig,
    ShellMode,
    ShellPolicy,
    ShellPolicyViolation,
    ToolcageConfig,
    ToolLimitsTable,
)
from toolcage.sidecar import (
    POLICY_REFUSED,
    SidecarClient,
    SidecarClosed,
    SidecarError,
    SidecarLauncher,
    SidecarLost,
    SidecarUnavailable,
    default_runtime_dir,
    prepare_workspace,
)

from ._errors import (
    PermissionDeniedError,
    ToolCancelledError,
    ToolError,
    ToolExecutionError,
    ToolTimeoutError,
    ToolValidationError,
)
from ._result import TextContent, ToolResult
from ._security import SecurityCheck
from ._tool import FunctionDecl, SafetyTier, Tool, ToolExecutionContext

ANSWER_GRACE = 5.0
"""Seconds beyond a command's timeout to wait for the sidecar's answer before giving up."""
_SESSION_PATTERN = "^[A-Za-z0-9_.-]{1,64}$"
DISPLAY_COMMAND_CHARS = 60
"""Characters of a command shown in a display line."""
DISABLED_MESSAGE = 'the shell is disabled by the operator (shell.mode = "disabled")'


class SidecarHandle:
    """The sidecar client, entered into the runtime's exit stack when first used.

    A runtime that never runs a command never starts the daemon and holds nothing to close.
    """

    def __init__(self, client: SidecarClient, stack: AsyncExitStack | None = None) -> None:
        self.client = client
        self._stack = stack

    async def request(self, op: str, **arguments: Any) -> dict[str, Any]:
        if self._stack is not None:
            self._stack.push_async_callback(self.client.aclose)
            self._stack = None
        return await self.client.request(op, **arguments)

    async def check_health(self) -> None:
        """After a request went unanswered: restart the daemon if it is wedged."""
        with anyio.CancelScope(shield=True):
            await self.client.check_health()


class ShellExecTool:
    """Runs one command in a shell session of the sidecar (see the module docstring)."""

    name = "shell_exec"

    def __init__(
        self,
        config: ShellConfig,
        workspace: Path,
        sidecar: SidecarHandle | None,
        *,
        tool_limits: ToolLimitsTable | None = None,
    ) -> None:
        self.config = config
        self.workspace = workspace
        """The workspace (with its placeholders, when it names the principal)."""
        self.template = HostTemplate.parse(workspace)
        self.sidecar = sidecar
        """``None`` when the shell is disabled."""
        guest = "/workspace" if config.mode is not ShellMode.HOST else str(workspace)
        self.policy = ShellPolicy.from_config(config, workspace=guest)
        limits = None if tool_limits is None else tool_limits.of(self.name, self.timeout)
        cap = config.limits.output_bytes  # the most the sidecar accepts
        self.output_bytes = min((limits.output_bytes if limits else None) or cap, cap)
        """Bytes of stdout and of stderr a command keeps: ``[tools.shell_exec]``'s cap, at
        most ``[shell.limits]``'s."""

    @property
    def timeout(self) -> float:
        return self.config.limits.max_timeout + ANSWER_GRACE

    @property
    def safety_tier(self) -> SafetyTier:
        return SafetyTier.PRIVILEGED

    @property
    def needs(self) -> tuple[str, ...]:
        return ("sidecar", "network") if self.config.network else ("sidecar",)

    def schema(self) -> FunctionDecl:
        limits = self.config.limits
        return FunctionDecl(
            self.name,
            "Run a shell command in the workspace; the session keeps its directory and "
            "exported variables between calls.",
            {
                "type": "object",
                "properties": {
                    "command": {
                        "type": "string",
                        "minLength": 1,
                        "description": f"The command line: {self.policy.syntax.describe()}. "
                        "Programs: " + ", ".join(sorted(self.policy.allowed)),
                    },
                    "session_id": {
                        "type": "string",
                        "pattern": _SESSION_PATTERN,
                        "description": "Which shell session to use (default: 'default').",
                    },
                    "timeout": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "description": f"Seconds before the command is killed (default "
                        f"{limits.timeout:g}, at most {limits.max_timeout:g}).",
                    },
                    "background": {
                        "type": "boolean",
                        "description": "Start it in the background and return a job id "
                        "(read its output with shell_job).",
                    },
                },
                "required": ["command"],
                "additionalProperties": False,
            },
        )

    def check_command(self, command: str) -> None:
        """The shell policy's verdict, as the runtime's error."""
        if self.sidecar is None:
            raise PermissionDeniedError(DISABLED_MESSAGE)
        try:
            self.policy.check(command)
        except ShellPolicyViolation as exc:
            raise PermissionDeniedError(f"Shell policy {exc}", field="command") from None

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        command = str(args["command"])
        self.check_command(command)
        if self.sidecar is None:  # the check refused already; this keeps the types honest
            raise PermissionDeniedError(DISABLED_MESSAGE)
        session = session_key(ctx, args.get("session_id"))
        limits = self.config.limits
        timeout = min(float(args.get("timeout") or limits.timeout), limits.max_timeout)
        request: dict[str, Any] = {
            "session": session,
            "user": ctx.principal.user_id,
            "agent": ctx.principal.agent_id,
            "command": command,
            "timeout": timeout,
            "output_bytes": self.output_bytes,
        }
        if args.get("background"):
            request["background"] = True
        if not self.template.fixed.exists():
            # the sidecar needs it to start; it makes each user's own directory beneath it
            self.template.make_fixed()
        response = await call_sidecar(self.sidecar, "exec", request, timeout)
        if "job" in response:
            text = (
                f"Started background job {response['job']} in {response['cwd']}; read its "
                "output with shell_job."
            )
            details = {"job_id": response["job"], "background": True, "cwd": response["cwd"]}
            display = f"Started {shown_command(command)} in the background (job {response['job']})"
            return ToolResult.text(text, details=details, display=display)
        return render(response, timeout, command)


class ShellJobTool:
    """``shell_job``: read the output of a background command, or kill it."""

    name = "shell_job"

    def __init__(self, sidecar: SidecarHandle) -> None:
        self.sidecar = sidecar

    @property
    def timeout(self) -> float:
        return 60.0 + ANSWER_GRACE

    @property
    def safety_tier(self) -> SafetyTier:
        return SafetyTier.SIDE_EFFECTING

    def schema(self) -> FunctionDecl:
        return FunctionDecl(
            self.name,
            "Read new output of a background shell command, or kill it.",
            {
                "type": "object",
                "properties": {
                    "job_id": {"type": "string", "minLength": 1, "maxLength": 64},
                    "action": {"type": "string", "enum": ["output", "kill"]},
                    "wait": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": 60,
                        "description": "Seconds to wait for new output (output only).",
                    },
                    "session_id": {"type": "string", "pattern": _SESSION_PATTERN},
                },
                "required": ["job_id"],
                "additionalProperties": False,
            },
        )

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        request = {
            "session": session_key(ctx, args.get("session_id")),
            "job": args["job_id"],
            "user": ctx.principal.user_id,
            "agent": ctx.principal.agent_id,
        }
        if args.get("action", "output") == "kill":
            response = await call_sidecar(self.sidecar, "kill", request, 10.0)
            return ToolResult.text(
                f"Killed {args['job_id']} (exit code {response['exit_code']}).",
                details={"job_id": args["job_id"], "exit_code": response["exit_code"]},
                display=f"Killed job {args['job_id']}",
            )
        wait = float(args.get("wait") or 0.0)
        response = await call_sidecar(self.sidecar, "poll", {**request, "wait": wait}, wait)
        parts = [response["stdout"]]
        if response["stderr"]:
            parts.append(f"[stderr]\n{response['stderr']}")
        # Output lost to the sidecar's ring is marked inside stdout/stderr, where it was lost.
        state = "running" if response["running"] else f"exited with {response['exit_code']}"
        parts.append(f"[job {args['job_id']} {state}]")
        details = {
            "job_id": args["job_id"],
            "running": response["running"],
            "exit_code": response["exit_code"],
        }
        display = f"Job {args['job_id']} {state}"
        return ToolResult.text("\n".join(p for p in parts if p), details=details, display=display)


class ShellPolicyCheck:
    """The shell policy as a pipeline :class:`SecurityCheck` (for ``shell_exec`` only)."""

    policy_name = "shell"
    """How audit records and spans name this check's verdicts."""

    def __init__(self, tool: ShellExecTool) -> None:
        self.tool = tool

    def applies(self, tool: Tool) -> bool:
        """Whether ``tool`` is the shell this check governs."""
        return tool is self.tool

    def check(
        self, tool: Tool, args: Mapping[str, Any], ctx: ToolExecutionContext
    ) -> Mapping[str, Any]:
        if tool is self.tool:
            self.tool.check_command(str(args.get("command", "")))
        return args


def session_key(ctx: ToolExecutionContext, session_id: object) -> str:
    """The sidecar session of this principal's ``session_id``: its user, agent and
    conversation, joined so that no two principals share one."""
    key = ctx.principal.key(str(session_id or "default"))
    if len(key.encode()) > 200:  # the sidecar takes names up to 256 bytes
        key = "sha256:" + hashlib.sha256(key.encode()).hexdigest()
    return key


async def call_sidecar(
    sidecar: SidecarHandle, op: str, request: dict[str, Any], seconds: float
) -> dict[str, Any]:
    """One request, its failures mapped onto the error tree (the one place they are).

    ``seconds`` is how long the request itself may take; the sidecar gets some grace on
    top before the call gives up on it, so that even a stopped daemon cannot hang a call.
    """
    try:
        with anyio.fail_after(seconds + ANSWER_GRACE):
            return await sidecar.request(op, **request)
    except TimeoutError:
        await sidecar.check_health()
        raise ToolTimeoutError(
            f"the shell sidecar did not answer within {seconds + ANSWER_GRACE:g} s",
            details={"timeout": seconds + ANSWER_GRACE},
        ) from None
    except SidecarUnavailable as exc:
        raise ToolExecutionError(f"the shell is unavailable: {exc}") from None
    except SidecarClosed as exc:
        raise ToolCancelledError(f"the runtime is closed: {exc}") from None
    except SidecarLost as exc:
        raise ToolExecutionError(f"the shell command was lost: {exc}") from None
    except SidecarError as exc:
        if exc.code == POLICY_REFUSED:
            raise PermissionDeniedError(f"Shell policy {exc.message}", field="command") from None
        error: type[ToolError] = (
            ToolValidationError if exc.code in ("bad_request", "no_job") else ToolExecutionError
        )
        raise error(f"the shell refused: {exc.message}") from None


def shown_command(command: str) -> str:
    """A command as a display line shows it: its first line, cut, in backquotes."""
    lines = command.strip().splitlines() or [""]
    first = lines[0]
    if len(first) > DISPLAY_COMMAND_CHARS or len(lines) > 1:
        first = first[:DISPLAY_COMMAND_CHARS].rstrip() + " ..."
    return f"`{first}`"


def render(response: Mapping[str, Any], timeout: float, command: str = "") -> ToolResult:
    """A command's result as text for the model (stdout, then stderr, then a status line),
    with its details and display line (see the module docstring)."""
    parts = [response["stdout"].rstrip("\n")]
    if response["stderr"]:
        parts.append(f"[stderr]\n{response['stderr'].rstrip()}")
    details: dict[str, Any] = {
        key: response[key]
        for key in ("exit_code", "timed_out", "duration", "cwd", "stdout_bytes", "stderr_bytes")
    }
    exit_code = response["exit_code"]
    killed_by = "SIGKILL" if response["timed_out"] else _signal_name(exit_code)
    if killed_by is not None:
        details["signal"] = killed_by
    shown = shown_command(command)
    if response["timed_out"]:
        parts.append(
            f"[timed out after {timeout:g} s: the command and everything it started were "
            f"killed; cwd {response['cwd']}]"
        )
        text = "\n".join(p for p in parts if p)
        error = ToolTimeoutError(
            f"Command timed out after {timeout:g} s. Partial output:\n{text}",
            details={
                "elapsed": round(float(response["duration"]), 3),
                "timeout": timeout,
                "retryable": True,
            },
        )
        return ToolResult(
            content=(TextContent(text),),
            details=details,
            display=f"{shown} timed out after {timeout:g} s",
            is_error=True,
            error=error,
        )
    parts.append(
        f"[exit code {response['exit_code']}, {response['duration']:.2f} s, cwd {response['cwd']}]"
    )
    how = f"exit {exit_code}" if killed_by is None else f"killed by {killed_by}"
    display = f"Ran {shown} ({how}, {response['duration']:.2f} s)"
    return ToolResult.text("\n".join(p for p in parts if p), details=details, display=display)


def _signal_name(exit_code: object) -> str | None:
    """The signal an exit code of 128 + N names, by the shell's convention."""
    if not isinstance(exit_code, int) or not 128 < exit_code < 128 + signal.NSIG:
        return None
    try:
        return signal.Signals(exit_code - 128).name
    except ValueError:
        return None


def shell_builtins(
    config: ToolcageConfig, stack: AsyncExitStack, *, tool_limits: ToolLimitsTable
) -> tuple[list[Tool], list[SecurityCheck]]:
    """The shell tools and their policy check for ``config`` (the client joins ``stack``),
    with their limits from ``tool_limits``."""
    shell = config.shell
    workspace = shell.workspace_path(config.base_dir)
    if shell.mode is ShellMode.DISABLED:
        disabled = ShellExecTool(shell, workspace, None)
        return [disabled], [ShellPolicyCheck(disabled)]
    template = HostTemplate.parse(workspace)
    if shell.mode is ShellMode.SANDBOXED and os.geteuid() == 0 and not template.per_principal:
        prepare_workspace(template.fixed, shell.sandbox_uid)  # before any file tool writes
    absolute = shell.model_copy(update={"workspace": workspace})
    client = SidecarClient(SidecarLauncher(absolute, runtime_dir=default_runtime_dir()))
    sidecar = SidecarHandle(client, stack)
    tool = ShellExecTool(shell, workspace, sidecar, tool_limits=tool_limits)
    return [tool, ShellJobTool(sidecar)], [ShellPolicyCheck(tool)]
