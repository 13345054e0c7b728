"""``shell_exec``, the shell policy check, and :func:`shell_builtins`, which builds the shell
tools for a config (see the package's docstring)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

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
    SidecarClient,
    SidecarLauncher,
    default_runtime_dir,
    prepare_workspace,
)

from .._errors import (
    PermissionDeniedError,
)
from .._result import ToolResult
from .._security import SecurityCheck
from .._tool import FunctionDecl, SafetyTier, Tool, ToolExecutionContext
from ._job import ShellJobTool
from ._render import render, shown_command
from ._sidecar import ANSWER_GRACE, SESSION_PATTERN, SidecarHandle, call_sidecar, session_key

DISABLED_MESSAGE = 'the shell is disabled by the operator (shell.mode = "disabled")'


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
                        "pattern": SESSION_PATTERN,
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
