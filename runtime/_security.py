"""The security-policy seam of the pipeline.

After the arguments are validated and before the tool runs, every :class:`SecurityCheck`
of the runtime sees the call. A check either returns the arguments -- possibly rewritten,
as the path policy replaces each path with the canonical one it checked -- or raises
:class:`~toolcage.runtime.PermissionDeniedError` naming what was refused. Checks run in
order; each sees the previous one's arguments. An empty list allows everything: the
checks that matter (paths, shell, egress) are installed by :class:`Runtime` from config.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ._tool import Tool, ToolExecutionContext


class SecurityCheck(Protocol):
    """Inspects a validated call; returns the arguments to run with, or raises."""

    def check(
        self, tool: Tool, args: Mapping[str, Any], ctx: ToolExecutionContext
    ) -> Mapping[str, Any]: ...
