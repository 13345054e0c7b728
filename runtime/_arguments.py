"""From what a model sent to arguments a tool can trust: decoding, normalisation, validation.

Models get arguments wrong in a handful of common ways; the ones that are unambiguous are
repaired here, and everything else gets an error that says exactly which field is wrong,
what was expected and what came, so the model's next attempt can succeed:

- the whole arguments object arrives as JSON text (OpenAI and others send it that way);
- a parameter is spelled ``camelCase`` where the schema says ``snake_case``, or the reverse;
- a parameter has the name other agents' tools give it (``file_path`` for ``path``,
  ``cmd`` for ``command``; see :data:`ALIAS_GROUPS`): it is renamed when the schema
  declares exactly one name of its group and not the one sent;
- an optional parameter is ``null`` where its schema admits no null: it is left out;
- a number, boolean, array or object parameter arrives as a JSON string (``"[1, 2]"``);
- an enum value is spelled otherwise (``"UTF-8"`` for ``"utf-8"``; see :mod:`._spellings`).

A required parameter sent as ``null`` (where its schema admits no null) or as ``""`` is
missing, and the error says so ("'path' is required and was empty"); only a free-text
parameter (:data:`FREE_TEXT`, such as a file's ``content``) may be empty.

Arguments are also held to the limits of plain JSON data, all checked here, before anything
recurses into them (a parser, the schema validator, a tool): at most
:data:`MAX_DEPTH` levels of nesting (JSON text is measured before it is parsed), integers
of at most :data:`MAX_INT_DIGITS` digits (never converted when longer), finite numbers,
strings and field names that are valid Unicode (no lone surrogate, raw or escaped), and only
JSON types; the byte size limit comes from the config (``max_argument_bytes``). Each refusal
is a validation error that names the field.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._compiled_schema import Check, compile_schema
from ._errors import ToolError, ToolNotFoundError, ToolValidationError, UsageError
from ._schema_messages import (
    a_type,
    describe_schema_error,
    excerpt,
    failing_schema,
    field_path,
    json_type,
)
from ._spellings import Spelling, respelled, spellings
from ._tool import FunctionDecl

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects in arguments (the arguments object is level 1)."""
MAX_INT_DIGITS = 4300
"""Longest integer in arguments, in digits (Python's own default limit for int <-> str)."""
MAX_NAME_CHARS = 128
"""Longest tool name looked up (longer ones are not found, and shown cut to this)."""

ALIAS_GROUPS: tuple[tuple[str, ...], ...] = (
    ("path", "file_path", "filepath", "filename", "file_name", "file"),
    ("command", "cmd"),
    ("query", "q", "pattern", "search_query"),
    ("content", "text", "contents"),
    ("url", "uri", "link"),
    ("old_string", "old_str", "old_text"),
    ("new_string", "new_str", "new_text"),
)
"""Names that models trained on other agents' tools use for one parameter."""
FREE_TEXT = frozenset(
    {"content", "contents", "text", "new_string", "new_str", "new_text", "body", "data"}
)
"""Required parameters that may be the empty string (when their schema allows it)."""

_NOT_STRING_TYPES = frozenset({"object", "array", "integer", "number", "boolean", "null"})
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])([A-Z])")


def to_snake(name: str) -> str:
    return _CAMEL_BOUNDARY.sub(r"_\1", name).lower()


def to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class ArgumentSpec:
    """What is needed, per tool, to normalise and validate its arguments; built once.

    A schema that :func:`compile_schema` knows is checked by its compiled predicate; the
    :mod:`jsonschema` validator (imported on first need) words the errors, and checks every
    other schema.
    """

    __slots__ = (
        "_validator",
        "aliases",
        "check",
        "declared",
        "json_params",
        "name",
        "nulls_dropped",
        "properties",
        "required_values",
        "schema",
        "spellings",
    )

    def __init__(
        self,
        name: str,
        schema: Mapping[str, Any],
        check: Check | None,
        properties: Mapping[str, Any],
        aliases: Mapping[str, str],
        json_params: frozenset[str],
        validator: Validator | None = None,
        required_values: tuple[tuple[str, bool, bool], ...] = (),
        nulls_dropped: frozenset[str] = frozenset(),
        spellings: tuple[Spelling, ...] = (),
    ) -> None:
        self.name = name
        """The tool's name, for errors."""
        self.schema = schema
        self.check = check
        """The compiled predicate; ``None`` when only :mod:`jsonschema` can check it."""
        self.properties = properties
        """The schema's ``properties``."""
        self.aliases = aliases
        """Alternative spelling → the parameter name the schema uses."""
        self.json_params = json_params
        """Parameters whose schema type is not string: a string value is parsed as JSON."""
        self._validator = validator
        self.declared = frozenset(properties)
        """The parameter names the schema declares."""
        self.required_values = required_values
        """Each required parameter, whether a null value is missing for it (its schema admits
        no null) and whether an empty string is."""
        self.nulls_dropped = nulls_dropped
        """Optional parameters whose schema admits no null: a null value is left out."""
        self.spellings = spellings
        """String parameters that list their values, matched by spelling (see
        :mod:`._spellings`)."""

    @classmethod
    def of(cls, decl: FunctionDecl) -> ArgumentSpec:
        schema = decl.parameters
        check = compile_schema(schema)
        # A compiled schema is known to be valid (see _compiled_schema); any other one is
        # checked against its meta-schema now, so a bad schema fails on its first call.
        validator = None if check is not None else _validator(decl.name, schema)
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
        for alias, name in _group_aliases(properties).items():
            aliases.setdefault(alias, name)
        required = schema.get("required", ())
        required_values = tuple(
            (name, _null_is_missing(properties[name]), _empty_is_missing(name, properties[name]))
            for name in required
            if name in properties
        )
        nulls_dropped = frozenset(
            name
            for name, prop in properties.items()
            if name not in required and _null_is_missing(prop)
        )
        return cls(
            decl.name,
            schema,
            check,
            properties,
            aliases,
            frozenset(json_params),
            validator,
            required_values,
            nulls_dropped,
            spellings(properties),
        )

    @property
    def validator(self) -> Validator:
        """The :mod:`jsonschema` validator of the schema (made on first use)."""
        if self._validator is None:
            self._validator = _validator(self.name, self.schema)
        return self._validator


def _group_aliases(properties: Mapping[str, Any]) -> dict[str, str]:
    """Each undeclared name of an :data:`ALIAS_GROUPS` group (and its camelCase) -> the one
    name of the group the schema declares; groups with two declared names are left out."""
    aliases: dict[str, str] = {}
    for group in ALIAS_GROUPS:
        declared = [name for name in group if name in properties]
        if len(declared) != 1:
            continue
        for alias in group:
            for spelling in (alias, to_camel(alias)):
                if spelling not in properties:
                    aliases[spelling] = declared[0]
    return aliases


def _null_is_missing(schema: Any) -> bool:
    """Whether the (sub)schema of a parameter certainly refuses null."""
    types = _schema_types(schema)
    return bool(types) and "null" not in types


def _empty_is_missing(name: str, schema: Any) -> bool:
    """Whether ``""`` counts as missing for required parameter ``name``."""
    if name not in FREE_TEXT:
        return True
    shortest = schema.get("minLength", 0) if isinstance(schema, Mapping) else 0
    return isinstance(shortest, int) and shortest > 0


def _validator(name: str, schema: Mapping[str, Any]) -> Validator:
    import jsonschema

    try:
        validator_class = jsonschema.validators.validator_for(
            schema, default=jsonschema.Draft202012Validator
        )
        validator_class.check_schema(dict(schema))
    except jsonschema.SchemaError as exc:
        raise UsageError(f"tool {name!r} has an invalid schema: {exc.message}") from exc
    validator: Validator = validator_class(schema)
    return validator


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
    """The arguments object from a mapping or its JSON text, within every limit."""
    if isinstance(raw, str):
        if len(raw) > max_bytes:
            raise _too_large(len(raw), max_bytes)
        size = len(raw.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise _too_large(size, max_bytes)
        try:
            decoded = parse_json(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolValidationError(
                f"arguments are not valid JSON ({exc.msg} at line {exc.lineno} column "
                f"{exc.colno}); send a JSON object"
            ) from None
    else:
        decoded = raw
    if not isinstance(decoded, Mapping):
        raise ToolValidationError(
            f"arguments must be a JSON object, got {json_type(decoded)}; send a JSON object"
        )
    if not isinstance(raw, str) and check_plain_json(decoded) > max_bytes:
        size = _encoded_size(decoded)  # the bound is loose: measure exactly
        if size > max_bytes:
            raise _too_large(size, max_bytes)
    return dict(decoded)


def parse_json(text: str, field: str = "") -> Any:
    """``text`` parsed as JSON within the limits; ``field`` names it in errors ("" = whole).

    Raises :class:`json.JSONDecodeError` for text that is not JSON (the caller words it).
    """
    _check_text_depth(text, field)
    value = json.loads(text, parse_int=_parse_int)
    check_plain_json(value, field)
    return value


def check_plain_json(value: Any, field: str = "") -> int:
    """Refuse what plain JSON data cannot be (see the module docstring), naming the field.

    Iterative: a value nested far deeper than allowed is refused at :data:`MAX_DEPTH`,
    without recursion. Returns an upper bound of the value's size as JSON text, in bytes.
    """
    stack: list[tuple[Any, _Path]] = []
    size = _item_size(value, (), field or None, stack)
    while stack:
        node, path = stack.pop()
        if len(path) >= MAX_DEPTH:
            raise ToolValidationError(
                f"arguments nest deeper than {MAX_DEPTH} levels at {_subject(path)}; "
                "send flatter data",
                field=_path_text(path) or None,
            )
        size += 2
        if isinstance(node, Mapping):
            for key, item in node.items():
                if not isinstance(key, str):
                    raise ToolValidationError(
                        f"field names must be strings; {_subject(path)} has a "
                        f"{type(key).__name__} name",
                        field=_path_text(path) or None,
                    )
                if not key.isascii():
                    _check_text(key, (*path, key))
                size += _item_size(item, path, key, stack) + 6 * len(key) + 6
        else:
            for index, item in enumerate(node):
                size += _item_size(item, path, index, stack) + 2
    return size


_Path = tuple[str | int, ...]


def _item_size(
    item: Any, parent: _Path, key: str | int | None, stack: list[tuple[Any, _Path]]
) -> int:
    """Check one value (containers go on ``stack``); an upper bound of its JSON size."""
    if isinstance(item, str):
        if not item.isascii():
            _check_text(item, _join(parent, key))
        return 6 * len(item) + 2  # an escaped character takes at most six bytes
    if isinstance(item, bool) or item is None:
        return 5
    if isinstance(item, int):
        bits = item.bit_length()
        if bits > _SAFE_INT_BITS and abs(item) >= _INT_LIMIT:
            raise _huge_int(_join(parent, key))
        return bits // 3 + 2
    if isinstance(item, float):
        if not math.isfinite(item):
            path = _join(parent, key)
            raise ToolValidationError(
                f"{_subject(path)} is {item!r}, which JSON cannot carry; send a finite number",
                field=_path_text(path),
            )
        return 24
    if isinstance(item, Mapping | list | tuple):
        stack.append((item, _join(parent, key)))
        return 0
    path = _join(parent, key)
    if isinstance(item, _HugeInt):
        raise _huge_int(path)
    raise ToolValidationError(
        f"{_subject(path)} is a {type(item).__name__} value, which is not JSON",
        field=_path_text(path),
    )


def _join(parent: _Path, key: str | int | None) -> _Path:
    return parent if key is None else (*parent, key)


def _check_text(text: str, path: tuple[str | int, ...]) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        raise ToolValidationError(
            f"{_subject(path)} holds a lone surrogate (U+{code:04X}), which is not valid "
            "Unicode text; send valid text",
            field=_path_text(path),
        ) from None


class _HugeInt:
    """An integer of JSON text too long to convert: a marker, so the error names its field."""

    __slots__ = ()


_HUGE_INT = _HugeInt()
_INT_LIMIT = 10**MAX_INT_DIGITS
# Integers below 2**14000 have fewer than 4,215 digits: no need to compare them.
_SAFE_INT_BITS = 14000


def _parse_int(text: str) -> int | _HugeInt:
    digits = len(text) - text.startswith("-")
    return int(text) if digits <= MAX_INT_DIGITS else _HUGE_INT


def _huge_int(path: tuple[str | int, ...]) -> ToolValidationError:
    return ToolValidationError(
        f"{_subject(path)} is an integer of more than {MAX_INT_DIGITS:,} digits; "
        "send it as a string",
        field=_path_text(path),
    )


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _check_text_depth(text: str, field: str) -> None:
    """Refuse JSON text nested deeper than :data:`MAX_DEPTH`, before any parser sees it."""
    if text.count("[") + text.count("{") < MAX_DEPTH:
        return  # cannot be deeper
    brackets = _BRACKETS.findall(_JSON_STRING.sub("", text))
    depth = max(itertools.accumulate(_DEPTH_STEP[b] for b in brackets), default=0)
    if depth + (1 if field else 0) > MAX_DEPTH:
        where = f"field '{field}'" if field else "the arguments"
        raise ToolValidationError(
            f"{where} nest deeper than {MAX_DEPTH} levels; send flatter data",
            field=field or None,
        )


def checked_tool_name(name: object) -> tuple[str, ToolError]:
    """For a name no tool can have: a printable form of it, and the error for the call.

    A name that is not a string is the caller's error (``validation_error``, field
    ``tool``); a string that is not a tool name is ``not_found``, shown escaped and cut.
    """
    if not isinstance(name, str):
        shown = f"<{type(name).__name__}>"
        return shown, ToolValidationError(
            f"the tool name must be a string, got {json_type(name)}", field="tool"
        )
    shown = name if name.isascii() and name.isprintable() else json.dumps(name)[1:-1]
    if len(shown) > MAX_NAME_CHARS:
        shown = shown[: MAX_NAME_CHARS - 1] + "…"
    return shown, ToolNotFoundError(f"Tool {shown} is not available")


def _path_text(path: tuple[str | int, ...]) -> str:
    return field_path(path)


def _subject(path: tuple[str | int, ...]) -> str:
    text = _path_text(path)
    return f"field '{text}'" if text else "the arguments object"


def normalise_arguments(args: dict[str, Any], spec: ArgumentSpec) -> dict[str, Any]:
    """Apply the unambiguous repairs (alias spellings, optional nulls, JSON-in-a-string
    values, enum values by their spelling) and refuse a required parameter sent empty
    (see the module docstring)."""
    if spec.aliases and not spec.declared.issuperset(args):
        for key in [key for key in args if key not in spec.declared]:
            name = spec.aliases.get(key)
            if name is not None and name not in args:
                args[name] = args.pop(key)
    for name, null_is_missing, empty_is_missing in spec.required_values:
        value = args.get(name)
        if value is None:
            if null_is_missing and name in args:
                raise ToolValidationError(f"'{name}' is required and was null", field=name)
        elif empty_is_missing and value == "":
            raise ToolValidationError(f"'{name}' is required and was empty", field=name)
    if spec.nulls_dropped and None in args.values():
        for name in spec.nulls_dropped:
            if name in args and args[name] is None:
                del args[name]
    for name in spec.json_params:
        value = args.get(name)
        if isinstance(value, str):
            try:
                args[name] = parse_json(value, name)
            except json.JSONDecodeError:
                expected = sorted(_schema_types(spec.properties[name]))
                raise ToolValidationError(
                    f"field '{name}' must be {a_type(expected)}, got a string that is not JSON: "
                    f"{excerpt(value)}",
                    field=name,
                ) from None
    for name, allowed, folded in spec.spellings:
        value = args.get(name)
        if type(value) is str and value not in allowed:
            args[name] = respelled(value, allowed, folded)
    return args


def validate_arguments(args: Mapping[str, Any], spec: ArgumentSpec) -> None:
    """Raise :class:`ToolValidationError` describing the first problem, if any; its
    ``details.schema`` is the part of the schema the failing value had to meet."""
    if spec.check is not None and spec.check(args):
        return
    from jsonschema.exceptions import best_match

    error = best_match(spec.validator.iter_errors(args))
    if error is not None:
        raise ToolValidationError(
            describe_schema_error(error),
            field=field_path(error.absolute_path) or None,
            details={"schema": failing_schema(error)},
        )


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
