"""From what a model sent to arguments a tool can trust: decoding, normalisation, validation.

Models get arguments wrong in a handful of common ways; the ones that are unambiguous are
repaired here, and everything else gets an error that says exactly which field is wrong,
what was expected and what came, so the model's next attempt can succeed:

- the whole arguments object arrives as JSON text (OpenAI and others send it that way);
- a parameter is spelled ``camelCase`` where the schema says ``snake_case``, or the reverse;
- a parameter has the name other agents' tools give it (``file_path`` for ``path``,
  ``cmd`` for ``command``; see :data:`._repair.ALIAS_GROUPS`): it is renamed when the schema
  declares exactly one name of its group and not the one sent;
- an optional parameter is ``null`` where its schema admits no null: it is left out;
- a number, boolean, array or object parameter arrives as a JSON string (``"[1, 2]"``);
- an enum value is spelled otherwise (``"UTF-8"`` for ``"utf-8"``; see :mod:`._repair`).

A required parameter sent as ``null`` (where its schema admits no null) or as ``""`` is
missing, and the error says so ("'path' is required and was empty"); only a free-text
parameter (:data:`._repair.FREE_TEXT`, such as a file's ``content``) may be empty.

Arguments are also held to the limits of plain JSON data, all checked by :mod:`._decoding`
before anything recurses into them (a parser, the schema validator, a tool): at most
:data:`._decoding.MAX_DEPTH` levels of nesting (JSON text is measured before it is parsed),
integers of at most :data:`._decoding.MAX_INT_DIGITS` digits (never converted when longer),
finite numbers, strings and field names that are valid Unicode (no lone surrogate, raw or
escaped), and only JSON types; the byte size limit comes from the config
(``max_argument_bytes``). Each refusal is a validation error that names the field.

The steps live in three modules: :mod:`._decoding` (text to plain JSON under the limits),
:mod:`._repair` (what may be repaired, worked out once per schema) and this one, which
builds an :class:`ArgumentSpec` per tool, applies the repairs and validates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._compiled_schema import Check, compile_schema
from ._decoding import parse_json
from ._errors import ToolValidationError, UsageError
from ._repair import (
    Spelling,
    empty_is_missing,
    group_aliases,
    null_is_missing,
    respelled,
    schema_types,
    spellings,
    to_camel,
    to_snake,
)
from ._schema_messages import a_type, describe_schema_error, excerpt, failing_schema, field_path
from ._tool import FunctionDecl

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

_NOT_STRING_TYPES = frozenset({"object", "array", "integer", "number", "boolean", "null"})


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
        :mod:`._repair`)."""

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
            types = schema_types(prop)
            if types and "string" not in types and types <= _NOT_STRING_TYPES:
                json_params.add(name)
        for alias, name in group_aliases(properties).items():
            aliases.setdefault(alias, name)
        required = schema.get("required", ())
        required_values = tuple(
            (name, null_is_missing(properties[name]), empty_is_missing(name, properties[name]))
            for name in required
            if name in properties
        )
        nulls_dropped = frozenset(
            name
            for name, prop in properties.items()
            if name not in required and null_is_missing(prop)
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


def normalise_arguments(args: dict[str, Any], spec: ArgumentSpec) -> dict[str, Any]:
    """Apply the unambiguous repairs (alias spellings, optional nulls, JSON-in-a-string
    values, enum values by their spelling) and refuse a required parameter sent empty
    (see the module docstring)."""
    if spec.aliases and not spec.declared.issuperset(args):
        for key in [key for key in args if key not in spec.declared]:
            name = spec.aliases.get(key)
            if name is not None and name not in args:
                args[name] = args.pop(key)
    for name, null_missing, empty_missing in spec.required_values:
        value = args.get(name)
        if value is None:
            if null_missing and name in args:
                raise ToolValidationError(f"'{name}' is required and was null", field=name)
        elif empty_missing and value == "":
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
                expected = sorted(schema_types(spec.properties[name]))
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
