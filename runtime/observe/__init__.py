"""What watches calls, behind the core's :class:`~toolcage.runtime._observe.CallObserver`
seam: the audit log (:mod:`._log`, :mod:`._records`, :mod:`._sinks`; ``toolcage audit`` reads
it) and OpenTelemetry (:mod:`._telemetry`, imported only when configured);
:func:`~._observers.observation_for` puts together what a config asks for.

The seam itself (``_observe``) stays in the core, which calls it on every call. This package
imports the core only, and nothing of it but the assembly (``_runtime``) and the CLI.
"""

from __future__ import annotations

from toolcage.policies import Redactor, ToolcageConfig

from ._log import AuditLog
from ._sinks import AuditHandler, AuditSink, FileSink, HandlerSink

__all__ = [
    "AuditHandler",
    "AuditLog",
    "AuditSink",
    "FileSink",
    "HandlerSink",
    "audit_log",
]


def audit_log(
    config: ToolcageConfig, redactor: Redactor, handler: AuditHandler | None = None
) -> AuditLog | None:
    """The audit log ``config`` asks for, writing to ``handler`` when one is given
    (``None``: no ``[audit] path`` and no handler), its records redacted by ``redactor``
    (the runtime's)."""
    section = config.audit
    path = section.file(config.base_dir)
    sink: AuditSink
    if handler is not None:
        sink = HandlerSink(handler)
    elif path is not None:
        sink = FileSink(path, rotate_bytes=section.rotate_bytes, keep=section.keep)
    else:
        return None
    return AuditLog(
        sink,
        redactor,
        max_value_chars=section.max_value_chars,
        max_pending=section.max_pending,
        retry_seconds=section.retry_seconds,
    )
