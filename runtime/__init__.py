"""toolcage's runtime: the embedding API, the tool model, and the agent loop.

What an embedder needs is importable from here::

    from toolcage.runtime import Runtime, SafetyTier, UserMessage, run_turn, tool

The seams to plug into (:class:`~toolcage.runtime.abc.Tool`, security checks, approval
policies, model clients, ...) are in :mod:`toolcage.runtime.abc`; provider wire formats in
:mod:`toolcage.runtime.providers`. Everything else lives in private modules.
"""

from toolcage.policies import LoopLimits, ToolcageConfig, load_config
from toolcage.policies._public import publish

from ._approval import Approval, ApprovalRequest, CallbackApproval
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
from ._loop import StopReason, TurnResult, run_turn
from ._model_client import HttpModelClient, ModelAPIError
from ._result import ImageContent, TextContent, ToolResult
from ._runtime import Runtime
from ._tool import (
    Attachment,
    FunctionDecl,
    ProgressUpdate,
    SafetyTier,
    ToolCall,
    ToolExecutionContext,
)
from .providers.base import UserMessage

__all__ = [
    "Approval",
    "ApprovalRequest",
    "Attachment",
    "Block",
    "CallbackApproval",
    "ErrorKind",
    "FunctionDecl",
    "Hooks",
    "HttpModelClient",
    "ImageContent",
    "LoopLimits",
    "ModelAPIError",
    "PermissionDeniedError",
    "ProgressUpdate",
    "Rewrite",
    "Runtime",
    "SafetyTier",
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
    "ToolTimeoutError",
    "ToolValidationError",
    "ToolcageConfig",
    "TurnResult",
    "UsageError",
    "UserMessage",
    "load_config",
    "run_turn",
    "tool",
]

publish(globals(), __all__)
del publish
