"""From what a model sent to arguments a tool can trust: decoding, normalisation, validation.

Models get arguments wrong in a handful of common ways; the ones that are unambiguous are
repaired here, and everything else gets an error that says exactly which field is wrong,
what was expected and what came, so the model's next attempt can succeed:

- the whole arguments object arrives as JSON text (OpenAI and others send it that way);
- a parameter is spelled ``camelCase`` where the schema says ``snake_case``, or the reverse;
- a number, boolean, array or object parameter arrives as a JSON string (``"[1, 2]"``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
from jsonschema import ValidationError as SchemaError
from jsonschema.protocols import Validator

from ._errors import ToolValidationError, UsageError
from ._tool import FunctionDecl

_NOT_STRING_TYPES = frozenset({"object", "array", "integer", "number", "boolean", "null"})
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])([A-Z])")


def to_snake(name: str) -> str:
    return _CAMEL_BOUNDARY.sub(r"_\1", name).lower()


def to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@dataclass(frozen=True, slots=True)
class ArgumentSpec:
    """What is needed, per tool, to normalise and validate its arguments; built once."""

    validator: Validator
    properties: Mapping[str, Any]
    """The schema's ``properties``."""
    aliases: Mapping[str, str]
    """Alternative spelling → the parameter name the schema uses."""
    json_params: frozenset[str]
    """Parameters whose schema type is not string: a string value is parsed as JSON."""

    @classmethod
    def of(cls, decl: FunctionDecl) -> ArgumentSpec:
        schema = decl.parameters
        try:
            validator_class = jsonschema.validators.validator_for(
                schema, default=jsonschema.Draft202012Validator
            )
            validator_class.check_schema(dict(schema))
        except jsonschema.SchemaError as exc:
            raise UsageError(f"tool {decl.name!r} has an invalid schema: {exc.message}") from exc
        properties: Mapping[str, Any] = schema.get("properties", {})
        aliases: dict[str, str] = {}
        json_params = set()
        for name, prop in properties.items():
            for alias in (to_snake(name), to_camel(name)):
                if alias != name and alias not in properties:
                    aliases[alias] = name
            types = _schema_types(prop)
            if types and "string" not in types and types <= _NOT_STRING_TYPES:
                json_params.add(name)
        return cls(validator_class(schema), properties, aliases, frozenset(json_params))


def _schema_types(schema: Any) -> set[str]:
    """The JSON types a (sub)schema admits, looking through anyOf/oneOf; empty if unknown."""
    if not isinstance(schema, Mapping):
        return set()
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return set(declared)
    types: set[str] = set()
    for key in ("anyOf", "oneOf"):
        for option in schema.get(key, ()):
            option_types = _schema_types(option)
            if not option_types:
                return set()
            types |= option_types
    return types


def decode_arguments(raw: Mapping[str, Any] | str, max_bytes: int) -> dict[str, Any]:
    """The arguments object from a mapping or its JSON text, refusing oversized input."""
    if isinstance(raw, str):
        if len(raw) > max_bytes or len(raw.encode("utf-8")) > max_bytes:
            raise _too_large(len(raw.encode("utf-8")), max_bytes)
        try:
            decoded = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolValidationError(
                f"arguments are not valid JSON ({exc.msg} at line {exc.lineno} column "
                f"{exc.colno}); send a JSON object"
            ) from None
    else:
        decoded = raw
    if not isinstance(decoded, Mapping):
        raise ToolValidationError(
            f"arguments must be a JSON object, got {_json_type(decoded)}; send a JSON object"
        )
    if not isinstance(raw, str):
        size = _encoded_size(decoded)
        if size > max_bytes:
            raise _too_large(size, max_bytes)
    return dict(decoded)


def normalise_arguments(args: dict[str, Any], spec: ArgumentSpec) -> dict[str, Any]:
    """Apply the unambiguous repairs: alias spellings and JSON-in-a-string values."""
    if spec.aliases:
        for alias, name in spec.aliases.items():
            if alias in args and name not in args:
                args[name] = args.pop(alias)
    for name in spec.json_params:
        value = args.get(name)
        if isinstance(value, str):
            try:
                args[name] = json.loads(value)
            except json.JSONDecodeError:
                expected = sorted(_schema_types(spec.properties[name]))
                raise ToolValidationError(
                    f"field '{name}' must be {_a(expected)}, got a string that is not JSON: "
                    f"{_preview(value)}",
                    field=name,
                ) from None
    return args


def validate_arguments(args: Mapping[str, Any], spec: ArgumentSpec) -> None:
    """Raise :class:`ToolValidationError` describing the first problem, if any."""
    error = jsonschema.exceptions.best_match(spec.validator.iter_errors(args))
    if error is not None:
        raise ToolValidationError(describe_schema_error(error), field=_field_path(error) or None)


def describe_schema_error(error: SchemaError) -> str:
    """One sentence a model can act on: which field, what was expected, what came."""
    where = _field_path(error)
    subject = f"field '{where}'" if where else "the arguments object"
    value: Any = error.instance
    rule: Any = error.validator_value
    schema: Any = error.schema
    match error.validator:
        case "required":
            missing = [n for n in rule if n not in value]
            prefix = f"{where}." if where else ""
            names = ", ".join(f"'{prefix}{n}'" for n in missing)
            return f"missing required field {names}"
        case "additionalProperties":
            allowed = sorted(schema.get("properties", {}))
            extra = sorted(set(value) - set(allowed))
            return (
                f"{subject} has unknown field {', '.join(repr(e) for e in extra)}; "
                f"allowed fields: {', '.join(allowed) or 'none'}"
            )
        case "type":
            return f"{subject} must be {_a(rule)}, got {_described(value)}"
        case "enum":
            options = ", ".join(json.dumps(o) for o in rule)
            return f"{subject} must be one of {options}; got {_preview(value)}"
        case "const":
            return f"{subject} must be {json.dumps(rule)}; got {_preview(value)}"
        case _:
            return f"{subject}: {error.message}"


def _field_path(error: SchemaError) -> str:
    path = ""
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _json_type(value: Any) -> str:
    match value:
        case None:
            return "null"
        case bool():
            return "boolean"
        case int():
            return "integer"
        case float():
            return "number"
        case str():
            return "string"
        case list() | tuple():
            return "array"
        case _ if isinstance(value, Mapping):
            return "object"
    return type(value).__name__


def _a(expected: Any) -> str:
    if isinstance(expected, list):
        return " or ".join(_a(e) for e in expected if e != "null")
    return f"an {expected}" if str(expected)[:1] in "aeiou" else f"a {expected}"


def _described(value: Any) -> str:
    return f"{_json_type(value)} {_preview(value)}"


def _preview(value: Any, limit: int = 80) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _encoded_size(value: Mapping[str, Any]) -> int:
    try:
        return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    except (TypeError, ValueError) as exc:
        raise ToolValidationError(f"arguments are not JSON-serialisable: {exc}") from None


def _too_large(size: int, limit: int) -> ToolValidationError:
    return ToolValidationError(
        f"arguments are {size:,} bytes, over the limit of {limit:,} bytes; "
        "send less data per call (for example, write it in parts)"
    )
