"""toolcage's runtime: the embedding API, the tool model, and the agent loop.

What an embedder needs is importable from here::

    from toolcage.runtime import Runtime, SafetyTier, UserMessage, run_turn, tool

The seams to plug into (:class:`~toolcage.runtime.abc.Tool`, security checks, approval
policies, model clients, ...) are in :mod:`toolcage.runtime.abc`; provider wire formats in
:mod:`toolcage.runtime.providers`. Everything else is private: the pipeline core in this
folder's modules, and the parts in folders of their own -- ``wasm/`` and ``shell/`` (tool
kinds), ``agent/`` (the loop, model clients, provider formats), ``observe/`` (audit,
telemetry), ``mcp/`` (servers as tools; serving the runtime) and ``cli/`` (the command).

Every name is imported on first use (:pep:`562`). The first use of any of the core names
loads them all (and gives each its public module name, see
:mod:`toolcage.policies._public`); the agent loop, the model client, the provider formats
and ``@tool`` come one by one, so a host that only runs tools does not load what they need
(an HTTP client, pydantic's model builder for functions, OpenTelemetry, ...). Importing the
package alone loads nothing heavy: ``toolcage call --server`` imports a submodule of it and
the standard library only.
"""

import typing as _typing

if _typing.TYPE_CHECKING:
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

    from ._approval import Approval, ApprovalRequest, CallbackApproval
    from ._channel import JsonLinesChannel
    from ._decorator import tool
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
    from .agent._loop import StopReason, TurnResult, run_turn
    from .agent._model_client import HttpModelClient, ModelAPIError
    from .agent._scheduled_turns import ScheduledTurns
    from .agent.providers.base import UserMessage
    from .observe import AuditHandler
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
"""Exported names imported one by one on first use, and the module each comes from."""

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


_CORE = {
    "toolcage.host_bindings": ("Schedule", "TurnOutcome", "TurnRequest"),
    "toolcage.policies": (
        "LoopLimits",
        "Principal",
        "PrincipalError",
        "SessionKind",
        "SessionLink",
        "ToolcageConfig",
        "load_config",
    ),
    "._approval": ("Approval", "ApprovalRequest", "CallbackApproval"),
    "._errors": (
        "ErrorKind",
        "PermissionDeniedError",
        "ToolBlockedError",
        "ToolCancelledError",
        "ToolError",
        "ToolExecutionError",
        "ToolNotFoundError",
        "ToolTimeoutError",
        "ToolValidationError",
        "UsageError",
    ),
    "._hooks": (
        "Block",
        "Hooks",
        "Rewrite",
        "ToolEvent",
        "ToolExecutionEnd",
        "ToolExecutionStart",
        "ToolExecutionUpdate",
    ),
    "._result": ("Artifact", "ArtifactAction", "ImageContent", "TextContent", "ToolResult"),
    "._runtime": ("Runtime",),
    "._tool": (
        "Attachment",
        "FunctionDecl",
        "ProgressUpdate",
        "SafetyTier",
        "ToolCall",
        "ToolExecutionContext",
    ),
    ".observe": ("AuditHandler",),
}
"""The core names (every exported one not in :data:`_LAZY`), by module: imported together,
on first use of any of them, in this order."""


def __getattr__(name: str) -> _typing.Any:
    from toolcage.policies._public import publish

    namespace = globals()
    lazy = _LAZY.get(name)
    if lazy is not None:
        from importlib import import_module

        namespace[name] = getattr(import_module(lazy, __name__), name)
        publish(namespace, [name])
        return namespace[name]
    if name not in __all__ or "Runtime" in namespace:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    core = [each for names in _CORE.values() for each in names]
    for module_name, names in _CORE.items():
        module = import_module(module_name, __name__)
        namespace.update((each, getattr(module, each)) for each in names)
    publish(namespace, core)
    return namespace[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
