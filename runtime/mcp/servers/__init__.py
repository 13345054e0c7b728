"""The servers of ``[[mcp.servers]]`` as tools: :class:`~._servers.McpServers` starts them
(:mod:`._hub`, :mod:`._client`, over :mod:`._stdio` in the :mod:`._sandbox`) and turns
their tools into the runtime's (:mod:`._tools`, within :mod:`._limits`); a server that did
not start is :mod:`._unavailable` until a retry starts it. Imports the core only.
"""

from ._servers import McpServers

__all__ = ["McpServers"]
