"""Linking a guest module with WASI and its granted host bindings, once per tool.

A binding that is not granted is not defined in the linker, so a guest importing it fails
here, at ``instantiate_pre``, before it ever runs: an ungranted capability is absent, not
refused at call time. :class:`LinkError` names the first import that is missing and the
bindings that were granted; the tool turns it into ``permission_denied`` (see
:meth:`~._tool.WasmTool.execute`) and the loader into a config error for an operator's
module (see :func:`~._loader.check_module`).
"""

from __future__ import annotations

from collections.abc import Sequence

import wasmtime
from toolcage.host_bindings import HostBinding

from .._errors import UsageError


class LinkError(UsageError):
    """A guest imports something its granted host bindings (and WASI) do not provide."""


def link(
    name: str, engine: wasmtime.Engine, module: wasmtime.Module, bindings: Sequence[HostBinding]
) -> wasmtime.InstancePre:
    """``module`` of tool ``name`` linked with WASI and ``bindings``, pre-instantiated;
    :class:`LinkError` when it imports anything else."""
    linker = wasmtime.Linker(engine)
    try:
        linker.define_wasi()
        for binding in bindings:
            binding.define(linker)
        try:
            return linker.instantiate_pre(module)
        except wasmtime.WasmtimeError as exc:
            reason = str(exc).strip().splitlines()[0]
        granted = ", ".join(b.name for b in bindings) or "none"
        raise LinkError(
            f"WASM tool {name} cannot be linked: {reason} (granted host bindings: {granted})"
        )
    finally:
        linker.close()
