"""The ``[[mcp.servers]]`` config: MCP servers whose tools join the registry.

Each entry is either a ``command`` (started as a subprocess and spoken to over stdio) or a
``url`` (streamable HTTP)::

    [[mcp.servers]]
    name = "notes"                       # its tools are named notes__TOOL
    command = ["notes-mcp", "--stdio"]
    read_only = ["/srv/notes"]           # what the sandbox shows of the host
    read_write = ["data"]                # relative paths resolve against the config file
    network = false                      # no network namespace shared with the host
    env = ["NOTES_TOKEN"]                # host variables passed through, by name
    timeout = 30.0
    privileged = ["delete_note"]         # raised to privileged: every call needs approval
    hidden = ["debug_dump"]              # never registered
    processes = 256                      # the limits below show their defaults
    cpu_seconds = 600
    message_bytes = 16777216
    list_pages = 64

A stdio server runs under bubblewrap unless the operator writes ``sandbox = false``.

Two kinds of limits bind a server. Its processes' rlimits (``processes``, ``cpu_seconds``,
``memory_bytes``, ``open_files``) are kept by the kernel; a server it kills starts again at
the next call, with fresh budgets. What it *says* (``message_bytes``, ``list_pages``,
``listed_tools``, ``schema_bytes``) the runtime keeps in its own memory, so it is bounded as
it arrives; a server past one of those bounds is stopped and disabled until the runtime is
built again (a restarted one would do the same).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._mcp_serve import McpServeConfig

SERVER_NAME = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
"""snake_case without a double underscore, which separates server from tool."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class McpServerConfig(_Section):
    """One MCP server, under ``[[mcp.servers]]``."""

    name: str = Field(min_length=1, max_length=24)
    """Prefix of its tools' names (``NAME__TOOL``)."""
    command: tuple[str, ...] | None = Field(None, min_length=1)
    """Program and arguments of a stdio server."""
    url: str | None = None
    """Endpoint of a streamable HTTP server (``http://`` or ``https://``)."""
    sandbox: bool = True
    """Run a stdio server under bubblewrap; ``false`` runs it straight on the host."""
    read_only: tuple[Path, ...] = ()
    """Host directories a sandboxed server sees, read-only, at the same path."""
    read_write: tuple[Path, ...] = ()
    """Host directories a sandboxed server sees, writable, at the same path."""
    network: bool = False
    """Share the host's network with a sandboxed server."""
    env: tuple[str, ...] = ()
    """Names of host environment variables passed to a stdio server."""
    timeout: float = Field(30.0, gt=0)
    """Seconds one call (and the start of the server) may take."""
    memory_bytes: int = Field(4 * 1024**3, gt=0)
    """Data-segment limit (``RLIMIT_DATA``: heap and private writable mappings) of each of a
    stdio server's processes; reserved address space is not counted."""
    open_files: int = Field(256, gt=0)
    """Open file descriptors a stdio server's processes may hold."""
    processes: int = Field(256, ge=8)
    """Processes and threads a sandboxed stdio server may have at once, counted in its own
    sandbox (contains fork bombs; unsandboxed, every process of the runtime's user counts,
    and root's are not counted at all)."""
    cpu_seconds: int = Field(600, gt=0)
    """CPU seconds each of a stdio server's processes may use over its life; the kernel
    kills one that uses them up."""
    sandbox_uid: int = Field(65534, gt=0)
    """Host uid a sandboxed stdio server runs as when the runtime runs as root (root's
    own processes escape the process limit); its command and grants must be readable by it."""
    message_bytes: int = Field(16 * 1024**2, ge=64 * 1024)
    """The longest message (a line on stdio) read from a stdio server."""
    list_pages: int = Field(64, gt=0)
    """Pages one listing of the server's tools may take."""
    listed_tools: int = Field(512, gt=0)
    """Tools the server may declare: entries in one listing, and names since it started."""
    schema_bytes: int = Field(4 * 1024**2, gt=0)
    """JSON bytes of the declarations of the tools it has listed since it started, together
    (the latest declaration of each name)."""
    privileged: tuple[str, ...] = ()
    """Tools (by the server's own name) raised to privileged."""
    hidden: tuple[str, ...] = ()
    """Tools (by the server's own name) left out of the registry."""

    @model_validator(mode="after")
    def _check(self) -> Self:
        if not SERVER_NAME.fullmatch(self.name):
            raise ValueError(f"name {self.name!r} is not snake_case (lower-case words, '_')")
        if (self.command is None) == (self.url is None):
            raise ValueError(f"server {self.name!r}: give exactly one of command and url")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"server {self.name!r}: url must start with http:// or https://")
        return self


class McpConfig(_Section):
    """The ``[mcp]`` section."""

    servers: tuple[McpServerConfig, ...] = ()
    serve: McpServeConfig = McpServeConfig()
    """How ``toolcage mcp`` guards its HTTP transport."""

    @model_validator(mode="after")
    def _unique(self) -> Self:
        names = [server.name for server in self.servers]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"servers named more than once: {', '.join(twice)}")
        return self
