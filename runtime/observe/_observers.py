"""The call observers a runtime gets: its audit log and its telemetry, from config or the
embedder's arguments, both redacting with the runtime's one redactor."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcage.policies import Redactor, ToolcageConfig

from .._observe import CallObserver, Observation
from . import AuditHandler, AuditLog, audit_log

if TYPE_CHECKING:
    from ._telemetry import ToolTelemetry


def observation_for(
    config: ToolcageConfig,
    redactor: Redactor,
    audit: AuditHandler | None = None,
    telemetry: ToolTelemetry | None = None,
) -> tuple[Observation | None, AuditLog | None]:
    """The observation of calls that ``config`` and the arguments ask for (``None``: calls
    are not observed), and the audit log among its observers (which needs closing); what
    they send out passes through ``redactor``."""
    observers: list[CallObserver] = []
    log = audit_log(config, redactor, audit)
    if log is not None:
        observers.append(log)
    wanted = config.telemetry
    if telemetry is None and (wanted.traces or wanted.metrics):
        from ._telemetry import ToolTelemetry  # opentelemetry, only for configs that ask

        telemetry = ToolTelemetry(traces=wanted.traces, metrics=wanted.metrics)
    if telemetry is not None:
        observers.append(telemetry)
    return (Observation(observers, redactor) if observers else None), log
