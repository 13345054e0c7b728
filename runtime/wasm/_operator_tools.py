"""The operator's own guest tools: ``NAME.wasm`` + ``NAME.json`` in ``[guest_tools] dirs``.

A declaration has the format of the built-in ones (see :mod:`._tool`), minus ``replaces``.
Everything in it is checked when the runtime is built, and the first fault is a
:class:`~toolcage.policies.ConfigError` naming the file and the key path::

    tools/greet.json: safety_tier: 'harmless' is not one of read_only, side_effecting, privileged

The tools then load like the built-ins: the same engine, module cache and runner, the same
mount policy and host-binding grants (see :mod:`._loader`, which also links each module at
load, so a module that imports what its ``needs`` do not grant is refused there too).

A ``NAME.wasm`` that is a WebAssembly *component* (its header says so) is a tool of the
``toolcage:tool`` world (:mod:`._component_tool`): its ``needs`` may name only the
capabilities that world offers and ``mounts``, and its imports are checked against them
at load as well.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolcage.host_bindings._component_imports import COMPONENT_CAPABILITIES
from toolcage.policies import ConfigError, ToolcageConfig

from .._tool import SafetyTier
from ._spec import NON_BINDING_NEEDS, WasmToolSpec

COMPONENT_HEADER = b"\0asm\x0d\x00\x01\x00"
"""The first bytes of a WebAssembly component (a core module's say version 1, layer 0)."""
COMPONENT_NEEDS = COMPONENT_CAPABILITIES | {"mounts"}
"""What a component tool's ``needs`` may name: the ``toolcage:tool`` interfaces, and mounts."""

KEYS = frozenset(
    {"name", "description", "parameters", "safety_tier", "timeout", "path_arguments", "needs"}
)
"""What an operator's declaration may say."""
REQUIRED = ("name", "description", "parameters", "safety_tier", "timeout")
PATH_MODES = ("read", "write", "delete")


@dataclass(frozen=True, slots=True)
class OperatorTool:
    """One declared guest tool of the operator's."""

    spec: WasmToolSpec
    """Its declaration, parsed."""
    wasm: Path
    """Its module."""
    declaration: Path
    """Its ``NAME.json``, which errors name."""
    component: bool = False
    """Its ``NAME.wasm`` is a component of the ``toolcage:tool`` world, not a module."""


def operator_tools(
    config: ToolcageConfig, *, taken: Iterable[str], bindings: frozenset[str]
) -> list[OperatorTool]:
    """The tools in the config's ``[guest_tools] dirs``, in directory then name order;
    a name in ``taken`` or a need outside ``bindings`` (and the non-binding needs) is refused."""
    names = set(taken)
    tools: list[OperatorTool] = []
    for index, entry in enumerate(config.guest_tools.dirs):
        folder = entry if entry.is_absolute() else config.base_dir / entry
        if not folder.is_dir():
            raise ConfigError(f"guest_tools.dirs[{index}]: {folder}: no such directory")
        for declaration in sorted(folder.glob("*.json")):
            tool = _load(declaration, bindings)
            name = tool.spec.decl.name
            if name in names:
                raise ConfigError(f"{declaration}: name: {name!r} is already a tool's name")
            names.add(name)
            tools.append(tool)
    return tools


def _load(declaration: Path, bindings: frozenset[str]) -> OperatorTool:
    try:
        text = declaration.read_text(encoding="utf-8")
        raw = json.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{declaration}: cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{declaration}: not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{declaration}: must be a JSON object")
    _check(raw, declaration, bindings)
    wasm = declaration.with_suffix(".wasm")
    if not wasm.is_file():
        raise ConfigError(f"{declaration}: no module {wasm.name} beside it")
    try:
        with wasm.open("rb") as file:
            component = file.read(len(COMPONENT_HEADER)) == COMPONENT_HEADER
    except OSError as exc:
        raise ConfigError(f"{wasm}: cannot read: {exc.strerror}") from exc
    if component:
        for index, need in enumerate(raw.get("needs", [])):
            if need not in COMPONENT_NEEDS:
                raise ConfigError(
                    f"{declaration}: needs[{index}]: {need!r} is not offered to a component"
                    f" tool (one of {', '.join(sorted(COMPONENT_NEEDS))})"
                )
    try:
        spec = WasmToolSpec.from_json(text, str(declaration))
    except ValueError as exc:  # anything _check let through
        raise ConfigError(str(exc)) from exc
    return OperatorTool(spec, wasm, declaration, component)


def _check(raw: dict[str, Any], source: Path, bindings: frozenset[str]) -> None:
    """Refuse the first fault of a declaration, by key path."""

    def fault(key: str, message: str) -> ConfigError:
        return ConfigError(f"{source}: {key}: {message}")

    for key in sorted(set(raw) - KEYS):
        raise fault(key, "unknown key")
    for key in REQUIRED:
        if key not in raw:
            raise fault(key, "missing")
    name = raw["name"]
    if name != source.stem:
        raise fault("name", f"{name!r} must be the file's name {source.stem!r}")
    if not isinstance(raw["description"], str) or not raw["description"].strip():
        raise fault("description", "must be a non-empty string")
    _check_schema(raw["parameters"], fault)
    tiers = [tier.value for tier in SafetyTier]
    if raw["safety_tier"] not in tiers:
        raise fault("safety_tier", f"{raw['safety_tier']!r} is not one of {', '.join(tiers)}")
    timeout = raw["timeout"]
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise fault("timeout", f"{timeout!r} is not a positive number of seconds")
    paths = raw.get("path_arguments", {})
    if not isinstance(paths, dict):
        raise fault("path_arguments", "must be an object")
    properties = raw["parameters"].get("properties", {})
    for argument, mode in paths.items():
        if mode not in PATH_MODES:
            raise fault(f"path_arguments.{argument}", f"{mode!r} is not one of read, write, delete")
        if argument not in properties:
            raise fault(f"path_arguments.{argument}", "is not one of the parameters")
    needs = raw.get("needs", [])
    if not isinstance(needs, list):
        raise fault("needs", "must be a list")
    known = bindings | NON_BINDING_NEEDS
    for index, need in enumerate(needs):
        if need not in known:
            raise fault(f"needs[{index}]", f"{need!r} is not one of {', '.join(sorted(known))}")


def _check_schema(schema: Any, fault: Any) -> None:
    from jsonschema import Draft202012Validator, SchemaError

    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise fault("parameters", 'must be a JSON Schema object with "type": "object"')
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise fault(_key_path("parameters", exc.path), exc.message) from None


def _key_path(root: str, parts: Sequence[Any] | Iterable[Any]) -> str:
    path = root
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path
