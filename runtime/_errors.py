"""The exception tree is the error envelope.

Every failure of a tool call is one of these, and each maps one-to-one onto the
``error_type`` of the JSON envelope a caller (or a model) receives::

    ToolError                      (base; never raised itself)
    ├── ToolNotFoundError          not_found          unknown or disabled tool
    ├── ToolValidationError        validation_error   arguments do not fit the schema
    ├── PermissionDeniedError      permission_denied  approval refused, path/shell/egress policy
    ├── ToolBlockedError           blocked            a before_tool_call hook said no
    ├── ToolTimeoutError           timeout            the deadline passed (also a TimeoutError)
    ├── ToolExecutionError         execution_error    the tool itself failed or crashed
    └── ToolCancelledError         cancelled          the host aborted the call

Misuse of the embedding API (registering a bad tool name, a broken config) is a
different thing: :class:`UsageError`, a ``RuntimeError`` that is never turned into
an envelope because it is the embedder's bug, not the model's.
"""

from __future__ import annotations

import copy
import enum
from typing import Any, ClassVar, Self


class ErrorKind(enum.StrEnum):
    """The closed vocabulary of ``error_type`` values."""

    NOT_FOUND = "not_found"
    VALIDATION_ERROR = "validation_error"
    PERMISSION_DENIED = "permission_denied"
    BLOCKED = "blocked"
    TIMEOUT = "timeout"
    EXECUTION_ERROR = "execution_error"
    CANCELLED = "cancelled"


class UsageError(RuntimeError):
    """The embedder used the API wrongly (bad tool name, broken config, ...)."""


class ToolError(Exception):
    """Base of every tool-call failure; carries what the envelope needs."""

    kind: ClassVar[ErrorKind]

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details
        """Small JSON-serialisable facts a caller can act on (``retry_after``, the tier
        required, the seconds elapsed, ...); the envelope carries them as ``details``."""

    def rewritten(self, message: str, **changes: Any) -> Self:
        """A copy of this error (same class, traceback and attributes) saying ``message``,
        with the attributes ``changes`` names (``field``, ``details``) replaced."""
        copied = copy.copy(self)
        copied.message = message
        copied.args = (message,)
        for name, value in changes.items():
            setattr(copied, name, value)
        return copied

    def envelope(self, tool: str) -> dict[str, Any]:
        """The JSON error envelope for this failure of ``tool``."""
        body: dict[str, Any] = {
            "status": "error",
            "tool": tool,
            "error_type": self.kind.value,
            "message": self.message,
        }
        if self.field is not None:
            body["field"] = self.field
        if self.details:
            body["details"] = self.details
        return body


class ToolNotFoundError(ToolError):
    kind = ErrorKind.NOT_FOUND


class ToolValidationError(ToolError):
    kind = ErrorKind.VALIDATION_ERROR


class PermissionDeniedError(ToolError):
    kind = ErrorKind.PERMISSION_DENIED


class ToolBlockedError(ToolError):
    kind = ErrorKind.BLOCKED


class ToolTimeoutError(ToolError, TimeoutError):
    kind = ErrorKind.TIMEOUT


class ToolExecutionError(ToolError):
    kind = ErrorKind.EXECUTION_ERROR


class ToolCancelledError(ToolError):
    kind = ErrorKind.CANCELLED


ERROR_CLASSES: dict[ErrorKind, type[ToolError]] = {
    cls.kind: cls
    for cls in (
        ToolNotFoundError,
        ToolValidationError,
        PermissionDeniedError,
        ToolBlockedError,
        ToolTimeoutError,
        ToolExecutionError,
        ToolCancelledError,
    )
}
"""Look up the class for an ``error_type`` (runners that receive typed errors from a guest or
the sidecar rebuild the matching exception with it)."""
