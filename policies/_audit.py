"""The ``[audit]`` and ``[telemetry]`` sections: where the record of every call goes.

``[audit]`` turns the audit log on when it names a ``path`` (relative to the config file);
an embedder may instead hand the runtime a handler. ``redact_keys`` and
``redact_patterns`` add to the built-in redaction, never replace it, and apply to all that
leaves the process, not the audit log alone: spans, log records and error messages pass
through the same :class:`~._redaction.Redactor`.

``[telemetry]`` asks for OpenTelemetry spans and metrics through the globally configured
providers. It needs the ``opentelemetry-api`` package (``pip install 'toolcage[otel]'``);
asking for it without the package is refused when the config is read.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AuditConfig(_Section):
    """One JSON line per call and per approval decision."""

    path: Path | None = None
    """The log file (created 0600); unset: no audit log unless the embedder passes a handler."""
    rotate_bytes: int = Field(16 * 1024 * 1024, gt=0)
    """The file is rotated (renamed to ``PATH.1``) before it would grow past this size."""
    keep: int = Field(5, ge=0)
    """Rotated files kept (``PATH.1`` newest .. ``PATH.N``); older ones are removed."""
    redact_keys: tuple[str, ...] = ()
    """Key names (any case) whose values never leave the process, beside the built-in ones
    (``password``, ``token``, ``api_key``, ``authorization``, ...)."""
    redact_patterns: tuple[str, ...] = ()
    """Regular expressions whose matches never leave the process, beside the built-in token
    shapes (bearer tokens, ``sk-...``, ``ghp_...``, ``AKIA...``, JWTs, private keys, ...)."""
    max_value_chars: int = Field(2048, gt=0)
    """A string argument longer than this is cut in the record (after redaction)."""
    max_pending: int = Field(10_000, gt=0)
    """Records held while the sink is slow or failing; beyond them records are counted as
    dropped, and the count is written as a record of its own once the sink works again."""
    retry_seconds: float = Field(1.0, gt=0)
    """How long the writer waits before it retries a failing sink."""

    @field_validator("redact_patterns")
    @classmethod
    def _compiles(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a regular expression: {exc}") from None
        return patterns

    def file(self, base_dir: Path) -> Path | None:
        """The log file, resolved against the config file's directory."""
        return None if self.path is None else base_dir / self.path


class TelemetryConfig(_Section):
    """OpenTelemetry spans and metrics of tool calls (through the global providers)."""

    traces: bool = False
    """A span ``execute_tool NAME`` per call."""
    metrics: bool = False
    """A counter of calls and a histogram of their durations, per tool and outcome."""

    @model_validator(mode="after")
    def _api_installed(self) -> TelemetryConfig:
        if self.traces or self.metrics:
            try:
                for module in ("opentelemetry.trace", "opentelemetry.metrics"):
                    importlib.import_module(module)
            except ImportError:
                raise ValueError(
                    "traces and metrics need the opentelemetry-api package "
                    "(pip install 'toolcage[otel]')"
                ) from None
        return self
