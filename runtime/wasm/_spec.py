"""A guest tool's declaration (``wasm_tools/tools/NAME.json``), read once, and what the C
guests' :class:`~._tool.WasmTool` and the components' tool read from it.

Each guest tool is declared by ``wasm_tools/tools/NAME.json`` next to its C source::

    {"name": "file_read", "description": "...", "parameters": {...JSON Schema...},
     "safety_tier": "read_only", "timeout": 10,
     "path_arguments": {"path": "read"}, "needs": ["fs"]}

See :mod:`._tool` for what each member means to a call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Literal, cast

from .._errors import UsageError
from .._tool import FunctionDecl, SafetyTier
from ._commit import ReplaceSpec
from ._runner import GuestLimits

NON_BINDING_NEEDS = frozenset({"mounts", "attachments"})
"""Entries of ``needs`` that are not host bindings."""

PathMode = Literal["read", "write", "delete"]


@dataclass(frozen=True, slots=True)
class WasmToolSpec:
    """A guest tool's declaration (its ``NAME.json``)."""

    decl: FunctionDecl
    """Name, description and parameters, as models see them."""
    safety_tier: SafetyTier
    """Its tier; decides approval and mount modes."""
    timeout: float
    """Default seconds per call."""
    path_arguments: Mapping[str, PathMode]
    """Which arguments are paths, and whether the tool reads or writes them."""
    needs: tuple[str, ...]
    """Capabilities it uses (see the module docstring)."""
    replaces: ReplaceSpec | None = None
    """The file it changes, replaced atomically (see :mod:`._commit`), if any."""
    relay: tuple[str, str] | None = None
    """``(capability, call)`` when the tool is that one host call and nothing else: it runs
    the shared relay guest, linked with that call alone (see
    :mod:`toolcage.host_bindings._relay`)."""

    @property
    def module(self) -> str:
        """The built module it runs: ``relay`` for a relay tool, else its own name's."""
        return "relay" if self.relay is not None else self.decl.name

    @classmethod
    def from_json(cls, text: str, source: str) -> WasmToolSpec:
        """Parse a declaration; :class:`UsageError` naming ``source`` when it is malformed."""
        try:
            raw = json.loads(text)
            paths = {str(k): cast(PathMode, v) for k, v in raw.get("path_arguments", {}).items()}
            if any(mode not in ("read", "write", "delete") for mode in paths.values()):
                raise ValueError("path_arguments values must be 'read', 'write' or 'delete'")
            replaces = raw.get("replaces")
            needs = tuple(str(n) for n in raw.get("needs", ()))
            return cls(
                decl=FunctionDecl(raw["name"], raw["description"], raw["parameters"]),
                safety_tier=SafetyTier(raw["safety_tier"]),
                timeout=float(raw["timeout"]),
                path_arguments=MappingProxyType(paths),
                needs=needs,
                replaces=(
                    None if replaces is None else ReplaceSpec.from_json(replaces, raw["parameters"])
                ),
                relay=None if "relay" not in raw else _relay(raw["relay"], needs),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise UsageError(f"bad WASM tool declaration {source}: {exc}") from exc


def _relay(value: object, needs: tuple[str, ...]) -> tuple[str, str]:
    """A declaration's ``relay``: ``"CAPABILITY.CALL"`` of a capability it needs."""
    capability, dot, call = value.partition(".") if isinstance(value, str) else ("", "", "")
    if not dot or not capability or not call:
        raise ValueError(f"relay must be 'capability.call', not {value!r}")
    if capability not in needs:
        raise ValueError(f"relay {value!r}: capability {capability!r} is not in its needs")
    return capability, call


def discover_specs() -> list[WasmToolSpec]:
    """The declarations in the package's ``tools/`` folder, by name."""
    tools = resources.files("toolcage.wasm_tools").joinpath("tools")
    specs = [
        WasmToolSpec.from_json(entry.read_text(encoding="utf-8"), entry.name)
        for entry in tools.iterdir()
        if entry.name.endswith(".json")
    ]
    return sorted(specs, key=lambda s: s.decl.name)


class DeclaredTool:
    """What a guest tool reads from its declaration and limits, for the pipeline and
    listings: the C guests' :class:`WasmTool` and the components' tool share it."""

    spec: WasmToolSpec
    limits: GuestLimits

    @property
    def name(self) -> str:
        return self.spec.decl.name

    @property
    def timeout(self) -> float:
        return self.limits.timeout

    @property
    def safety_tier(self) -> SafetyTier:
        return self.spec.safety_tier

    @property
    def path_arguments(self) -> Mapping[str, PathMode]:
        return self.spec.path_arguments

    @property
    def needs(self) -> tuple[str, ...]:
        return self.spec.needs

    def schema(self) -> FunctionDecl:
        return self.spec.decl
