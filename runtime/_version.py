"""toolcage's own version: what ``toolcage --version`` prints, what the MCP server reports
as its ``serverInfo.version`` and what telemetry names as the instrumentation's version.

It is the installed distribution's, read from its metadata once; a source tree that was
never installed has none and says ``0+unknown``.
"""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError, version

UNKNOWN = "0+unknown"
"""The version of a source tree that was never installed."""


@functools.cache
def toolcage_version() -> str:
    """The installed ``toolcage`` distribution's version (:data:`UNKNOWN` without one)."""
    try:
        return version("toolcage")
    except PackageNotFoundError:
        return UNKNOWN
