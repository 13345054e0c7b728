"""The unambiguous repairs of a model's arguments, worked out once per schema.

One job: from a tool's schema, what may be repaired and how -- another name for a parameter
(``camelCase`` for ``snake_case`` and the reverse, :data:`ALIAS_GROUPS`), a null or empty
value that means "missing" (:func:`null_is_missing`, :func:`empty_is_missing`), and an enum
value by its spelling (:func:`spellings`, :func:`respelled`). :mod:`._arguments` applies them.

Enum values are matched by their spelling: ``"UTF-8"`` for ``"utf-8"``, ``"ISO8601"`` for
``"iso8601"``, ``"get"`` for ``"GET"``. Clients and models write the same value in different
spellings (the seeds of a tool's documentation say ``UTF-8`` where its schema says
``utf-8``). A value of a top-level string parameter whose schema lists its values (``enum``
or ``const``, also inside ``anyOf``/``oneOf``) is compared with each listed value ignoring
case (Unicode case folding) and the separators ``-``, ``_``, ``.`` and spaces; when exactly
one listed value matches, the tool receives that value as the schema spells it. A schema
that lists two values equal under this comparison (``"a"`` and ``"A"``, ``"iso8601"`` and
``"iso-8601"``) keeps those values exact: either spelling then has its own meaning, and
neither is guessed. This applies to every tool, built-in or not, as the other argument
repairs do; a value already listed is never changed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

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

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])([A-Z])")


def to_snake(name: str) -> str:
    return _CAMEL_BOUNDARY.sub(r"_\1", name).lower()


def to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def group_aliases(properties: Mapping[str, Any]) -> dict[str, str]:
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


def null_is_missing(schema: Any) -> bool:
    """Whether the (sub)schema of a parameter certainly refuses null."""
    types = schema_types(schema)
    return bool(types) and "null" not in types


def empty_is_missing(name: str, schema: Any) -> bool:
    """Whether ``""`` counts as missing for required parameter ``name``."""
    if name not in FREE_TEXT:
        return True
    shortest = schema.get("minLength", 0) if isinstance(schema, Mapping) else 0
    return isinstance(shortest, int) and shortest > 0


def schema_types(schema: Any) -> set[str]:
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
            option_types = schema_types(option)
            if not option_types:
                return set()
            types |= option_types
    return types


Spelling = tuple[str, frozenset[str], dict[str, str]]
"""A parameter's name, its listed values, and each folded spelling -> its listed value."""

MAX_FOLDED_CHARS = 64
"""Longer values are never folded: no listed value is that long."""

_SEPARATORS = str.maketrans("", "", "-_. ")


def fold(value: str) -> str:
    """The form two spellings of one value share."""
    return value.casefold().translate(_SEPARATORS)


def spellings(properties: Mapping[str, Any]) -> tuple[Spelling, ...]:
    """The :data:`Spelling` of each top-level string parameter that lists its values."""
    found: list[Spelling] = []
    for name, schema in properties.items():
        listed = _listed(schema)
        if not listed:
            continue
        by_fold: dict[str, str | None] = {}
        for value in listed:
            key = fold(value)
            by_fold[key] = value if by_fold.get(key, value) == value else None
        unique = {key: value for key, value in by_fold.items() if value is not None}
        if unique:
            found.append((name, frozenset(listed), unique))
    return tuple(found)


def respelled(value: str, allowed: frozenset[str], folded: dict[str, str]) -> str:
    """``value``, or the one listed value it spells."""
    if value in allowed or len(value) > MAX_FOLDED_CHARS:
        return value
    return folded.get(fold(value), value)


def _listed(schema: Any) -> list[str]:
    """The string values a parameter's schema lists (directly or in its options)."""
    if not isinstance(schema, Mapping):
        return []
    enum = schema.get("enum")
    listed = [v for v in enum if isinstance(v, str)] if isinstance(enum, list) else []
    if isinstance(schema.get("const"), str):
        listed.append(schema["const"])
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        for option in options if isinstance(options, list) else ():
            listed += _listed(option)
    return listed
