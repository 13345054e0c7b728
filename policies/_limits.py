"""The limits of each tool, resolved once from ``[limits]`` and its ``[tools.NAME]`` entry.

A tool's limits come from three places, most specific first: the operator's
``[tools.NAME]`` entry, the tool's own declaration (its timeout), then the ``[limits]``
defaults. :class:`ToolLimitsTable` resolves them on a tool's first use and keeps the
frozen :class:`ToolLimits`, so every part of a runtime that bounds a tool reads the same
values: the pipeline its deadline and truncation, a WASM guest its memory and output caps,
the shell its output cap.

``memory_bytes``, ``output_bytes`` and ``concurrency`` stay ``None`` unless the operator
sets them; each tool that has such a limit applies its own default (for concurrency, the
pipeline: see :mod:`._concurrency`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._concurrency import Concurrency

if TYPE_CHECKING:
    from ._config import LimitsConfig, ToolcageConfig, ToolOverride


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """The resolved limits of one tool."""

    timeout: float
    """Seconds a call may take before it is stopped."""
    truncate_bytes: int
    """UTF-8 bytes of each part of a result kept in the reply; the rest goes to the store."""
    memory_bytes: int | None = None
    """The operator's memory limit for a WASM guest, if set."""
    output_bytes: int | None = None
    """The operator's cap on the raw output of a guest or command, if set."""
    concurrency: Concurrency | None = None
    """The operator's concurrency mode for the tool, if set."""

    @classmethod
    def resolve(
        cls, limits: LimitsConfig, override: ToolOverride | None, declared_timeout: float | None
    ) -> ToolLimits:
        """The override's values, else the tool's declared timeout, else ``limits``."""
        if override is None:
            return cls(declared_timeout or limits.default_timeout, limits.truncate_bytes)
        return cls(
            timeout=override.timeout or declared_timeout or limits.default_timeout,
            truncate_bytes=override.truncate_bytes or limits.truncate_bytes,
            memory_bytes=override.memory_bytes,
            output_bytes=override.output_bytes,
            concurrency=(
                None if override.concurrency is None else Concurrency.parse(override.concurrency)
            ),
        )


class ToolLimitsTable:
    """The :class:`ToolLimits` of the tools of one config, each resolved once and kept.

    ::

        table = ToolLimitsTable.from_config(config)
        table.of("file_read", declared_timeout=10.0)   # resolved now, kept
        table.of("file_read", declared_timeout=10.0)   # the same object

    A tool's limits are kept under its name from its first :meth:`of`, so every caller that
    bounds the tool gets that one object; callers pass the same declared timeout.
    """

    def __init__(self, limits: LimitsConfig, overrides: Mapping[str, ToolOverride]) -> None:
        self.limits = limits
        self.overrides = dict(overrides)
        self._resolved: dict[str, ToolLimits] = {}

    @classmethod
    def from_config(cls, config: ToolcageConfig) -> ToolLimitsTable:
        """The table of ``config.limits`` and ``config.tools``."""
        return cls(config.limits, config.tools)

    def of(self, name: str, declared_timeout: float | None) -> ToolLimits:
        """The limits of tool ``name``, whose own declaration says ``declared_timeout``."""
        found = self._resolved.get(name)
        if found is None:
            resolved = ToolLimits.resolve(self.limits, self.overrides.get(name), declared_timeout)
            found = self._resolved.setdefault(name, resolved)  # atomic: one object per name
        return found

    def truncate_bytes(self, name: str) -> int:
        """The byte limit of a result of ``name``, for any name a call gave (an unknown one
        too, which is not kept: names from a model do not grow the table)."""
        found = self._resolved.get(name)
        if found is not None:
            return found.truncate_bytes
        return ToolLimits.resolve(self.limits, self.overrides.get(name), None).truncate_bytes
