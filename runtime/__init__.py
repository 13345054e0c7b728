"""toolcage's runtime: the tool model, the pipeline every call takes, and the embedding API."""

from toolcage.policies import LoopLimits

from ._accumulator import ToolCallAccumulator
from ._approval import Approval, ApprovalPolicy, ApprovalRequest, CallbackApproval
from ._decorator import FunctionTool, tool
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
from ._model_client import HttpModelClient, ModelAPIError, ModelClient
from ._registry import ToolInfo, ToolRegistry
from ._result import ContentBlock, ImageContent, TextContent, ToolResult
from ._runtime import Runtime
from ._security import SecurityCheck
from ._tool import (
    Attachment,
    FunctionDecl,
    ProgressUpdate,
    SafetyTier,
    Tool,
    ToolCall,
    ToolExecutionContext,
)

__all__ = [
    "Approval",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Attachment",
    "Block",
    "CallbackApproval",
    "ContentBlock",
    "ErrorKind",
    "FunctionDecl",
    "FunctionTool",
    "Hooks",
    "HttpModelClient",
    "ImageContent",
    "LoopLimits",
    "ModelAPIError",
    "ModelClient",
    "PermissionDeniedError",
    "ProgressUpdate",
    "Rewrite",
    "Runtime",
    "SafetyTier",
    "SecurityCheck",
    "StopReason",
    "TextContent",
    "Tool",
    "ToolBlockedError",
    "ToolCall",
    "ToolCallAccumulator",
    "ToolCancelledError",
    "ToolError",
    "ToolEvent",
    "ToolExecutionContext",
    "ToolExecutionEnd",
    "ToolExecutionError",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "ToolInfo",
    "ToolNotFoundError",
    "ToolRegistry",
    "ToolResult",
    "ToolTimeoutError",
    "ToolValidationError",
    "TurnResult",
    "UsageError",
    "run_turn",
    "tool",
]
