"""The ``[mcp.serve]`` config: how ``toolcage mcp`` guards its HTTP transport.

::

    [mcp.serve]
    token_env = "NOTES_MCP_TOKEN"        # the bearer token, read from this variable
    # token = "..."                      # or written here (the file is then a secret)

Without either, ``TOOLCAGE_MCP_TOKEN`` is read. ``--http`` refuses to start without a token
(on loopback too, unless the operator passes ``--unsafe-no-token``, which is taken only from
the command line); once set, the token is required on every request, on a ``--socket`` too.
"""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator


class McpServeConfig(BaseModel):
    """The ``[mcp.serve]`` section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str | None = Field(None, min_length=1, repr=False)
    """The bearer token itself."""
    token_env: str | None = Field(None, min_length=1)
    """Name of the environment variable holding the bearer token."""

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if self.token is not None and self.token_env is not None:
            raise ValueError("give at most one of token and token_env")
        return self
