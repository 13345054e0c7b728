"""MCP tool annotations from the tool model.

``readOnlyHint`` follows the safety tier; ``destructiveHint`` marks tools that delete, overwrite
or run arbitrary commands (a tool that only adds, such as ``memory_save``, is not destructive);
``openWorldHint`` marks tools that reach the network; the title is the name in words.
"""

from __future__ import annotations

import mcp_types as types

from ..._registry import ToolInfo
from ..._tool import SafetyTier

_DESTRUCTIVE_VERBS = ("delete", "write", "edit", "clear", "update")
"""Name words of tools that remove or replace what exists."""

_NETWORK_NEEDS = frozenset({"http", "search"})
"""Needs that mean the tool talks to hosts outside the machine."""


def annotations_for(info: ToolInfo) -> types.ToolAnnotations:
    """The annotations an MCP client is shown for one tool."""
    read_only = info.safety_tier is SafetyTier.READ_ONLY
    words = info.name.split("_")
    destructive = not read_only and (
        info.safety_tier is SafetyTier.PRIVILEGED or any(w in _DESTRUCTIVE_VERBS for w in words)
    )
    return types.ToolAnnotations(
        title=" ".join(words).capitalize(),
        read_only_hint=read_only,
        destructive_hint=destructive,
        open_world_hint=bool(_NETWORK_NEEDS.intersection(info.needs)),
    )
