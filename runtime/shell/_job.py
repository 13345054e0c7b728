"""``shell_job``: poll or kill a command that ``shell_exec`` started in the background."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._result import ToolResult
from .._tool import FunctionDecl, SafetyTier, ToolExecutionContext
from ._sidecar import ANSWER_GRACE, SESSION_PATTERN, SidecarHandle, call_sidecar, session_key


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
                    "session_id": {"type": "string", "pattern": SESSION_PATTERN},
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
