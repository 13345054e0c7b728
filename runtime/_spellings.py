"""Enum values matched by their spelling: ``"UTF-8"`` for ``"utf-8"``, ``"ISO8601"`` for
``"iso8601"``, ``"get"`` for ``"GET"``.

Clients and models write the same value in different spellings (the seeds of a tool's
documentation say ``UTF-8`` where its schema says ``utf-8``). A value of a top-level string
parameter whose schema lists its values (``enum`` or ``const``, also inside ``anyOf``/``oneOf``) is
compared with each listed value ignoring case (Unicode case folding) and the separators
``-``, ``_``, ``.`` and spaces; when exactly one listed value matches, the tool receives that
value as the schema spells it. A schema that lists two values equal under this comparison
(``"a"`` and ``"A"``, ``"iso8601"`` and ``"iso-8601"``) keeps those values exact: either
spelling then has its own meaning, and neither is guessed. This applies to every tool,
built-in or not, as the other argument repairs do; a value already listed is never changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
