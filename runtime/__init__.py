"""toolcage's runtime: the embedding API, the tool model, and the agent loop.

What an embedder needs is importable from here::

    from toolcage.runtime import Runtime, SafetyTier, UserMessage, run_turn, tool

The seams to plug into (:class:`~toolcage.runtime.abc.Tool`, security checks, approval
policies, model clients, ...) are in :mod:`toolcage.runtime.abc`; provider wire formats in
:mod:`toolcage.runtime.providers`. Everything else is private: the pipeline core in this
folder's modules, and the parts in folders of their own -- ``wasm/`` and ``shell/`` (tool
kinds), ``agent/`` (the loop, model clients, provider formats), ``observe/`` (audit,
telemetry), ``mcp/`` (servers as tools; serving the runtime) and ``cli/`` (the command).

The agent loop, the model client, the provider formats and ``@tool`` are imported on first
use of their names (:pep:`562`), so a host that only runs tools does not load what they
need (an HTTP client, pydantic's model builder for functions, OpenTelemetry, ...).
"""

import typing as _typing

from toolcage.host_bindings import Schedule, TurnOutcome, TurnRequest
from toolcage.policies import (
    LoopLimits,
    Principal,
    PrincipalError,
    SessionKind,
    SessionLink,
    ToolcageConfig,
    load_config,
)
from toolcage.policies._public import publish as _publish

from ._approval import Approval, ApprovalRequest, CallbackApproval
from ._errors import (
    ErrorKind,
    PermissionDeniedError,
    ToolBlockedError,
    ToolCancelledError,
    ToolError,
    ToolExecutionError,
    ToolNotFoundError,
    ToolTimeoutError,
    ToolValidationError,
    UsageError,
)
from ._hooks import (
    Block,
    Hooks,
    Rewrite,
    ToolEvent,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
)
from ._result import Artifact, ArtifactAction, ImageContent, TextContent, ToolResult
from ._runtime import Runtime
from ._tool import (
    Attachment,
    FunctionDecl,
    ProgressUpdate,
    SafetyTier,
    ToolCall,
    ToolExecutionContext,
)
from .observe import AuditHandler

if _typing.TYPE_CHECKING:
    from ._channel import JsonLinesChannel
    from ._decorator import tool
    from .agent._loop import StopReason, TurnResult, run_turn
    from .agent._model_client import HttpModelClient, ModelAPIError
    from .agent._scheduled_turns import ScheduledTurns
    from .agent.providers.base import UserMessage
    from .observe._telemetry import ToolTelemetry

_LAZY = {
    "HttpModelClient": ".agent._model_client",
    "JsonLinesChannel": "._channel",
    "ModelAPIError": ".agent._model_client",
    "ScheduledTurns": ".agent._scheduled_turns",
    "StopReason": ".agent._loop",
    "ToolTelemetry": ".observe._telemetry",
    "TurnResult": ".agent._loop",
    "UserMessage": ".agent.providers.base",
    "run_turn": ".agent._loop",
    "tool": "._decorator",
}
"""Exported names imported on first use, and the module each comes from."""

__all__ = [
    "Approval",
    "ApprovalRequest",
    "Artifact",
    "ArtifactAction",
    "Attachment",
    "AuditHandler",
    "Block",
    "CallbackApproval",
    "ErrorKind",
    "FunctionDecl",
    "Hooks",
    "HttpModelClient",
    "ImageContent",
    "JsonLinesChannel",
    "LoopLimits",
    "ModelAPIError",
    "PermissionDeniedError",
    "Principal",
    "PrincipalError",
    "ProgressUpdate",
    "Rewrite",
    "Runtime",
    "SafetyTier",
    "Schedule",
    "ScheduledTurns",
    "SessionKind",
    "SessionLink",
    "StopReason",
    "TextContent",
    "ToolBlockedError",
    "ToolCall",
    "ToolCancelledError",
    "ToolError",
    "ToolEvent",
    "ToolExecutionContext",
    "ToolExecutionEnd",
    "ToolExecutionError",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "ToolNotFoundError",
    "ToolResult",
    "ToolTelemetry",
    "ToolTimeoutError",
    "ToolValidationError",
    "ToolcageConfig",
    "TurnOutcome",
    "TurnRequest",
    "TurnResult",
    "UsageError",
    "UserMessage",
    "load_config",
    "run_turn",
    "tool",
]

_publish(globals(), [name for name in __all__ if name not in _LAZY])


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    _publish(globals(), [name])
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
