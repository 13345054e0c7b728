"""What a validation error tells the model: the field, the rule, the limit, the actual size.

A model reads every validation message and retries from it, so each one names the field,
states the rule it broke with its limit (``maxLength`` 240, ``maximum`` 20, the enum's
options), and says how large or what the value was -- as a size ("100,001 characters",
"33 items", "an integer of 4,001 digits") or an excerpt of at most :data:`EXCERPT_CHARS`
characters, never the value itself. :mod:`jsonschema`'s own messages quote the whole
instance (a 100 KB note came back whole, then cut by the output limit before the reason),
so :func:`describe_schema_error` words every validator kind itself, here and nowhere else;
a kind it does not know gets a generic sentence that still quotes no more than an excerpt.

:func:`schema_excerpt` gives the part of a schema that the failing value had to meet (its
validating keywords, no descriptions), bounded in size: the envelope carries it as
``details.schema`` and the agent loop's retry message quotes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import ValidationError as SchemaError

EXCERPT_CHARS = 40
"""Longest excerpt of a value quoted in a message."""
NAME_CHARS = 40
"""Longest field name (one part of a path) quoted in a message; longer ones are cut."""
MAX_LISTED = 8
"""Most enum options, unknown fields or allowed fields listed in one message."""
SCHEMA_CHARS = 600
"""Longest schema excerpt, as JSON text."""

_VALIDATING = (
    "type",
    "enum",
    "const",
    "format",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "required",
    "additionalProperties",
    "items",
    "properties",
    "anyOf",
    "oneOf",
)
"""The keywords a schema excerpt keeps, in this order; annotations are left out."""


def describe_schema_error(error: SchemaError) -> str:
    """One sentence a model can act on: which field, which rule and limit, what came."""
    where = field_path(error.absolute_path)
    subject = f"field '{where}'" if where else "the arguments object"
    value: Any = error.instance
    rule: Any = error.validator_value
    match error.validator:
        case "required":
            prefix = f"{where}." if where else ""
            missing = [n for n in rule if isinstance(value, Mapping) and n not in value]
            return f"missing required field {_listed([f'{prefix}{n}' for n in missing])}"
        case "additionalProperties":
            schema: Any = error.schema
            allowed = sorted(schema.get("properties", {}))
            extra = sorted(set(value) - set(allowed)) if isinstance(value, Mapping) else []
            return (
                f"{subject} has unknown field {_listed(extra)}; "
                f"allowed fields: {_listed(allowed, quoted=False) or 'none'}"
            )
        case "type":
            return f"{subject} must be {a_type(rule)}, got {described(value)}"
        case "enum":
            return f"{subject} must be one of {_options(rule)}; got {excerpt(value)}"
        case "const":
            return f"{subject} must be {_options([rule])}; got {excerpt(value)}"
        case "maxLength":
            advice = "shorten it or split it into parts" if rule >= 1000 else "shorten it"
            return (
                f"{subject} is {_chars(value)} long, over the limit of {rule:,} characters; "
                f"{advice}"
            )
        case "minLength":
            return (
                f"{subject} is {_chars(value)} long; it needs at least {_plural(rule, 'character')}"
            )
        case "maxItems":
            return (
                f"{subject} has {_plural(len(value), 'item')}, over the limit of {rule:,}; "
                f"send at most {rule:,}"
            )
        case "minItems":
            return f"{subject} has {_plural(len(value), 'item')}; send at least {rule:,}"
        case "maxProperties":
            return f"{subject} has {_plural(len(value), 'field')}, over the limit of {rule:,}"
        case "minProperties":
            return f"{subject} has {_plural(len(value), 'field')}; send at least {rule:,}"
        case "maximum":
            return f"{subject}: {_number(value)} is greater than the maximum of {_number(rule)}"
        case "minimum":
            return f"{subject}: {_number(value)} is less than the minimum of {_number(rule)}"
        case "exclusiveMaximum":
            return f"{subject}: {_number(value)} must be less than {_number(rule)}"
        case "exclusiveMinimum":
            return f"{subject}: {_number(value)} must be greater than {_number(rule)}"
        case "multipleOf":
            return f"{subject}: {_number(value)} is not a multiple of {_number(rule)}"
        case "pattern":
            return f"{subject} does not match the pattern {excerpt(rule, 80)}; got {excerpt(value)}"
        case "format":
            return f"{subject} is not a valid {excerpt(rule)}; got {excerpt(value)}"
        case "uniqueItems":
            return f"{subject} has repeated items; each of its {len(value):,} items must differ"
        case None:  # the schema ``false``: nothing is allowed here
            return f"{subject} is not allowed"
        case _:
            return (
                f"{subject} does not satisfy the schema's {error.validator!r} rule "
                f"{excerpt(rule, 80)}; got {described(value)}"
            )


def failing_schema(error: SchemaError) -> dict[str, Any]:
    """The part of the schema the failing value had to meet, as :func:`schema_excerpt`:
    a missing field's own schema, the allowed fields of an object, else the subschema."""
    schema: Any = error.schema
    rule: Any = error.validator_value
    if error.validator == "required" and isinstance(error.instance, Mapping):
        properties = schema.get("properties", {})
        for name in rule:
            if name not in error.instance and name in properties:
                return schema_excerpt(properties[name])
    if error.validator == "additionalProperties":
        names = sorted(schema.get("properties", {}))
        return {"type": "object", "properties": names, "additionalProperties": False}
    return schema_excerpt(schema)


def schema_excerpt(schema: Any, limit: int = SCHEMA_CHARS) -> dict[str, Any]:
    """The validating keywords of ``schema`` (descriptions dropped), at most ``limit``
    characters as JSON: long enums and patterns are cut, then nested schemas shown only
    by their types."""
    if not isinstance(schema, Mapping):
        return {}
    kept = _kept(schema, nested=True)
    if len(json.dumps(kept, ensure_ascii=False)) > limit:
        kept = _kept(schema, nested=False)
    if len(json.dumps(kept, ensure_ascii=False)) > limit:
        kept = {k: kept[k] for k in ("type", "required") if k in kept}
    if len(json.dumps(kept, ensure_ascii=False)) > limit:
        kept = {k: kept[k] for k in ("type",) if k in kept}
    return kept


def _kept(schema: Mapping[str, Any], *, nested: bool) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key in _VALIDATING:
        if key not in schema:
            continue
        value = schema[key]
        if key in ("enum", "required") and isinstance(value, list):
            value = [_cut(v) for v in value[:MAX_LISTED]] + (
                [f"... {len(value) - MAX_LISTED} more"] if len(value) > MAX_LISTED else []
            )
        elif key in ("pattern", "const", "format"):
            value = _cut(value, 80)
        elif key == "properties" and isinstance(value, Mapping):
            value = {
                _cut(name): (_kept(sub, nested=False) if nested else _types(sub))
                for name, sub in list(value.items())[: MAX_LISTED * 2]
            }
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            value = _kept(value, nested=False) if nested else _types(value)
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            value = [_kept(v, nested=False) if nested else _types(v) for v in value[:MAX_LISTED]]
        kept[key] = value
    return kept


def _types(schema: Any) -> Any:
    return {"type": schema["type"]} if isinstance(schema, Mapping) and "type" in schema else {}


def _cut(value: Any, limit: int = EXCERPT_CHARS) -> Any:
    return value[: limit - 1] + "…" if isinstance(value, str) and len(value) > limit else value


def field_path(parts: Sequence[str | int] | Any) -> str:
    """``items[3]``, ``headers.accept``: each name cut to :data:`NAME_CHARS` characters."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            name = _cut(str(part), NAME_CHARS)
            text += f".{name}" if text else name
    return text


def json_type(value: Any) -> str:
    """The JSON type of a plain value (a Python type name for anything else)."""
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


def a_type(expected: Any) -> str:
    """``a string``, ``an integer or a string`` (null is left out: it is never the fix)."""
    if isinstance(expected, list):
        return " or ".join(a_type(e) for e in expected if e != "null")
    return f"an {expected}" if str(expected)[:1] in "aeiou" else f"a {expected}"


def described(value: Any) -> str:
    """A value's type with its size or a short excerpt: ``integer 5``, ``array of 3 items``."""
    if isinstance(value, list | tuple):
        return f"array of {_plural(len(value), 'item')}"
    if isinstance(value, Mapping):
        return f"object of {_plural(len(value), 'field')}"
    return f"{json_type(value)} {excerpt(value)}"


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """``value`` as JSON, cut to about ``limit`` characters, with its size when cut."""
    if isinstance(value, str):
        if len(value) <= limit:
            return json.dumps(value, ensure_ascii=False)
        shown = json.dumps(value[: limit - 1], ensure_ascii=False)[:-1]
        return f'{shown}…" ({_chars(value)})'
    if isinstance(value, int) and not isinstance(value, bool):
        return _number(value)
    if isinstance(value, list | tuple | Mapping):
        return described(value)
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number(value: Any) -> str:
    """A number as written, or its first digits and length when it is very long."""
    if isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
        digits = len(text) - (value < 0)
        return text if len(text) <= 24 else f"{text[:12]}… (an integer of {digits:,} digits)"
    return excerpt(value) if not isinstance(value, float) else repr(value)


def _chars(value: Any) -> str:
    return _plural(len(value), "character") if isinstance(value, str) else described(value)


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def _options(options: Any) -> str:
    if not isinstance(options, list):
        return excerpt(options)
    shown = ", ".join(excerpt(o) for o in options[:MAX_LISTED])
    more = len(options) - MAX_LISTED
    return f"{shown} (and {more:,} more)" if more > 0 else shown


def _listed(names: Sequence[Any], *, quoted: bool = True) -> str:
    shown = [repr(_cut(str(n))) if quoted else _cut(str(n)) for n in names[:MAX_LISTED]]
    more = len(names) - MAX_LISTED
    return ", ".join(shown) + (f" (and {more:,} more)" if more > 0 else "")
