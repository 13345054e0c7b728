"""``[guest_tools]``: directories of the operator's own WASM guest tools."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict


class GuestToolsConfig(BaseModel):
    """Where the operator's guest tools are: each directory holds ``NAME.wasm`` beside its
    declaration ``NAME.json``; relative directories resolve against the config's own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dirs: tuple[Path, ...] = ()
    """Directories of guest tools, loaded in order."""
