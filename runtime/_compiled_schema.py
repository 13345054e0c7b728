"""The common part of JSON Schema, compiled once per tool into a plain Python predicate.

Tool schemas use a small part of JSON Schema: ``type``, ``properties``, ``required``,
``additionalProperties``, ``items``, ``anyOf``, string ``enum``/``const``, lengths, bounds
and ``pattern``, plus annotations (``description``, ``title``, ``default``, ...).
:func:`compile_schema` turns a schema made only of these into a predicate that answers, per
call, whether arguments are valid -- without :mod:`jsonschema`, whose import and per-call
work cost far more than the check itself.

The predicate is exact where it says yes: every value it accepts, Draft 2020-12 (what
:mod:`jsonschema` applies to a schema without ``$schema``) accepts too. It may say no for a
value the full validator accepts (an unusual Python type), so the caller runs the full
validator on every *no*, which also words the error. A schema is compiled only when each of
its keywords is known here and has a value the 2020-12 meta-schema allows, so a compiled
schema needs no meta-schema check either; for any other schema :func:`compile_schema`
returns ``None`` and the caller uses :mod:`jsonschema` for everything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]
"""Whether a value is valid (see the module docstring for what *no* means)."""

_ANNOTATIONS: dict[str, Callable[[Any], bool]] = {
    "title": lambda v: isinstance(v, str),
    "description": lambda v: isinstance(v, str),
    "$comment": lambda v: isinstance(v, str),
    "format": lambda v: isinstance(v, str),  # an annotation: formats are not asserted
    "default": lambda v: True,
    "examples": lambda v: isinstance(v, list),
    "deprecated": lambda v: isinstance(v, bool),
    "readOnly": lambda v: isinstance(v, bool),
    "writeOnly": lambda v: isinstance(v, bool),
}
"""Keywords that do not validate, with what the meta-schema allows as their value."""

_TYPES: dict[str, Check] = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
    "number": lambda v: type(v) is int or type(v) is float,
    "boolean": lambda v: v is True or v is False,
    "null": lambda v: v is None,
}
"""Each JSON type, for the plain values that arguments are (other values are refused, and
the full validator decides)."""

_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    }
)


class _Unsupported(Exception):
    """The schema uses something this module does not compile."""


def compile_schema(schema: Mapping[str, Any]) -> Check | None:
    """The predicate of ``schema``, or ``None`` when it uses more than this module knows."""
    try:
        return _compile(dict(schema))
    except _Unsupported:
        return None


def _compile(schema: Any) -> Check:
    if schema is True:
        return _always
    if schema is False:
        return _never
    if type(schema) is not dict:
        raise _Unsupported
    checks: list[Check] = []
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            if not _ANNOTATIONS[key](value):
                raise _Unsupported
        elif key not in _KEYWORDS:
            raise _Unsupported
    if "type" in schema:
        checks.append(_type_check(schema["type"]))
    if "enum" in schema:
        checks.append(_enum_check(schema["enum"]))
    if "const" in schema:
        checks.append(_enum_check([schema["const"]]))
    string = _string_check(schema)
    if string is not None:
        checks.append(string)
    number = _number_check(schema)
    if number is not None:
        checks.append(number)
    array = _array_check(schema)
    if array is not None:
        checks.append(array)
    obj = _object_check(schema)
    if obj is not None:
        checks.append(obj)
    if "anyOf" in schema:
        checks.append(_any_of_check(schema["anyOf"]))
    return _all_of(checks)


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


def _all_of(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:  # the usual object schema: its type, then its properties
        first, second = checks
        return lambda value: first(value) and second(value)
    frozen = tuple(checks)
    return lambda value: all(check(value) for check in frozen)


def _type_check(declared: Any) -> Check:
    if isinstance(declared, str) and declared in _TYPES:
        return _TYPES[declared]
    if (
        type(declared) is not list
        or not declared
        or len(set(map(str, declared))) != len(declared)
        or not all(isinstance(name, str) and name in _TYPES for name in declared)
    ):
        raise _Unsupported
    options = tuple(_TYPES[name] for name in declared)
    return lambda value: any(option(value) for option in options)


def _enum_check(options: Any) -> Check:
    # Only strings: the full validator's equality (1 == 1.0, True != 1) is not needed then.
    if type(options) is not list or not all(isinstance(option, str) for option in options):
        raise _Unsupported
    allowed = frozenset(options)
    return lambda value: isinstance(value, str) and value in allowed


def _count(schema: dict[str, Any], key: str) -> int | None:
    if key not in schema:
        return None
    value = schema[key]
    if type(value) is not int or value < 0:
        raise _Unsupported
    return value


def _bound(schema: dict[str, Any], key: str) -> int | float | None:
    if key not in schema:
        return None
    value = schema[key]
    if type(value) is not int and type(value) is not float:
        raise _Unsupported
    return value


def _string_check(schema: dict[str, Any]) -> Check | None:
    shortest = _count(schema, "minLength")
    longest = _count(schema, "maxLength")
    pattern = schema.get("pattern")
    if "pattern" in schema:
        if not isinstance(pattern, str):
            raise _Unsupported
        try:
            search = re.compile(pattern).search
        except re.error:
            raise _Unsupported from None
    if shortest is None and longest is None and pattern is None:
        return None
    low = 0 if shortest is None else shortest
    high = longest

    def check(value: Any) -> bool:
        if not isinstance(value, str):
            return True
        size = len(value)
        if size < low or (high is not None and size > high):
            return False
        return pattern is None or search(value) is not None

    return check


def _number_check(schema: dict[str, Any]) -> Check | None:
    low = _bound(schema, "minimum")
    high = _bound(schema, "maximum")
    above = _bound(schema, "exclusiveMinimum")
    below = _bound(schema, "exclusiveMaximum")
    if low is None and high is None and above is None and below is None:
        return None

    def check(value: Any) -> bool:
        if type(value) is not int and type(value) is not float:
            return _plain_non_number(value)
        return not (
            (low is not None and value < low)
            or (high is not None and value > high)
            or (above is not None and value <= above)
            or (below is not None and value >= below)
        )

    return check


def _array_check(schema: dict[str, Any]) -> Check | None:
    fewest = _count(schema, "minItems")
    most = _count(schema, "maxItems")
    item = _compile(schema["items"]) if "items" in schema else None
    if fewest is None and most is None and item is None:
        return None

    def check(value: Any) -> bool:
        if type(value) is not list:
            return not isinstance(value, list | tuple)
        size = len(value)
        if (fewest is not None and size < fewest) or (most is not None and size > most):
            return False
        return item is None or all(item(element) for element in value)

    return check


def _object_check(schema: dict[str, Any]) -> Check | None:
    if not {"properties", "required", "additionalProperties"} & schema.keys():
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    if type(properties) is not dict:
        raise _Unsupported
    compiled = {name: _compile(sub) for name, sub in properties.items()}
    if (
        type(required) is not list
        or not all(isinstance(name, str) for name in required)
        or len(set(required)) != len(required)
    ):
        raise _Unsupported
    needed = tuple(required)
    others = _compile(schema.get("additionalProperties", True))
    fields = tuple(compiled.items())

    def check(value: Any) -> bool:
        if type(value) is not dict:
            return not isinstance(value, Mapping)
        for name in needed:
            if name not in value:
                return False
        for name, field in fields:
            if name in value and not field(value[name]):
                return False
        if others is not _always:
            for name, item in value.items():
                if name not in compiled and not others(item):
                    return False
        return True

    return check


def _plain_non_number(value: Any) -> bool:
    """Whether ``value`` is JSON data that is certainly no number (bounds do not apply)."""
    return value is None or value is True or value is False or isinstance(value, str | list | dict)


def _any_of_check(options: Any) -> Check:
    if type(options) is not list or not options:
        raise _Unsupported
    compiled = tuple(_compile(option) for option in options)
    return lambda value: any(option(value) for option in compiled)
