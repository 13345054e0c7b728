"""Plain host-Python file tools that declare ``path_arguments``, for testing the path check.

They trust the pipeline completely: whatever path reaches ``execute`` is mapped onto the
granted mount and used with ordinary (symlink-following) host calls. So any path the check
lets through wrongly shows up as a sentinel read, written, listed or deleted.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from toolcage.policies import MountPolicy
from toolcage.runtime import FunctionDecl, SafetyTier, ToolExecutionContext, ToolResult

Op = Literal["read", "write", "list", "delete"]

_PARAMS: dict[Op, dict[str, Any]] = {
    "read": {"path": {"type": "string"}},
    "write": {"path": {"type": "string"}, "content": {"type": "string"}},
    "list": {"path": {"type": "string"}},
    "delete": {"path": {"type": "string"}},
}


class HostFileTool:
    """``host_file_<op>``: one file operation on the host, through the granted mounts."""

    timeout = 10.0

    def __init__(self, op: Op, policy: MountPolicy) -> None:
        self.op = op
        self.policy = policy
        self.safety_tier = (
            SafetyTier.READ_ONLY if op in ("read", "list") else SafetyTier.SIDE_EFFECTING
        )
        self.path_arguments: Mapping[str, Literal["read", "write"]] = {
            "path": "read" if op in ("read", "list") else "write"
        }

    @property
    def name(self) -> str:
        return f"host_file_{self.op}"

    def schema(self) -> FunctionDecl:
        return FunctionDecl(
            self.name,
            f"{self.op} a file",
            {"type": "object", "properties": _PARAMS[self.op], "required": ["path"]},
        )

    def host_path(self, guest: str, ctx: ToolExecutionContext) -> Path:
        for mount in self.policy.mounts_for(self.name, self.safety_tier.value, ctx.principal):
            if guest == mount.guest or guest.startswith(mount.guest + "/"):
                return mount.host / guest[len(mount.guest) :].lstrip("/")
        raise AssertionError(f"the check passed a path outside the mounts: {guest!r}")

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        host = self.host_path(args["path"], ctx)
        if self.op == "read":
            return ToolResult.text(host.read_text(errors="replace"), details=args["path"])
        if self.op == "list":
            if not host.exists():
                return ToolResult.text("(nothing there)", details=args["path"])
            names = sorted(os.listdir(host)) if host.is_dir() else [host.name]
            return ToolResult.text("\n".join(names), details=args["path"])
        if self.op == "write":
            host.parent.mkdir(parents=True, exist_ok=True)
            host.write_text(args.get("content", ""))
            return ToolResult.text("ok", details=args["path"])
        if host.is_dir() and not host.is_symlink():
            shutil.rmtree(host)
        else:
            host.unlink()
        return ToolResult.text("deleted", details=args["path"])


def host_tools(policy: MountPolicy) -> list[HostFileTool]:
    return [HostFileTool(op, policy) for op in ("read", "write", "list", "delete")]
