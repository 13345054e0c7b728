"""Arguments from what a model sent to plain JSON data, held to the limits.

One job: turn a mapping or its JSON text into a plain ``dict`` before anything recurses into
it, refusing what plain JSON data cannot be -- more than the configured bytes, nesting past
:data:`MAX_DEPTH`, integers longer than :data:`MAX_INT_DIGITS` digits, non-finite numbers,
lone surrogates, non-JSON types -- with an error that names the field. Also the check of a
tool name no tool can have (:func:`checked_tool_name`). The overview of the steps from here
to trusted arguments is in :mod:`._arguments`.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from ._errors import ToolError, ToolNotFoundError, ToolValidationError
from ._schema_messages import field_path, json_type

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects in arguments (the arguments object is level 1)."""
MAX_INT_DIGITS = 4300
"""Longest integer in arguments, in digits (Python's own default limit for int <-> str)."""
MAX_NAME_CHARS = 128
"""Longest tool name looked up (longer ones are not found, and shown cut to this)."""


def decode_arguments(raw: Mapping[str, Any] | str, max_bytes: int) -> dict[str, Any]:
    """The arguments object from a mapping or its JSON text, within every limit."""
    if isinstance(raw, str):
        if len(raw) > max_bytes:
            raise _too_large(len(raw), max_bytes)
        size = len(raw.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise _too_large(size, max_bytes)
        try:
            decoded = parse_json(raw) if raw.strip() else {}  # checked as it is parsed
        except json.JSONDecodeError as exc:
            raise ToolValidationError(
                f"arguments are not valid JSON ({exc.msg} at line {exc.lineno} column "
                f"{exc.colno}); send a JSON object"
            ) from None
        return dict(_object(decoded))
    _object(raw)
    bound = _flat_bound(raw) if type(raw) is dict else -1
    if bound < 0:
        bound = check_plain_json(raw)
    if bound > max_bytes:
        size = _encoded_size(raw)  # the bound is loose: measure exactly
        if size > max_bytes:
            raise _too_large(size, max_bytes)
    return dict(raw)


def _object(decoded: Any) -> Mapping[str, Any]:
    if type(decoded) is not dict and not isinstance(decoded, Mapping):
        raise ToolValidationError(
            f"arguments must be a JSON object, got {json_type(decoded)}; send a JSON object"
        )
    return decoded


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


def _flat_bound(args: dict[Any, Any]) -> int:
    """:func:`check_plain_json`'s bound for the common object: ASCII names, and values that
    are ASCII strings, booleans, nulls, finite floats or integers of fewer than
    ``_SAFE_INT_BITS`` bits. ``-1`` for any other, which takes the full walk."""
    size = 2
    for key, item in args.items():
        if type(key) is not str or not key.isascii():
            return -1
        kind = type(item)
        if kind is str:
            if not item.isascii():
                return -1
            size += 6 * len(item) + 2
        elif kind is int:
            bits = item.bit_length()
            if bits > _SAFE_INT_BITS:
                return -1
            size += bits // 3 + 2
        elif kind is bool or item is None:
            size += 5
        elif kind is float and math.isfinite(item):
            size += 24
        else:
            return -1
        size += 6 * len(key) + 6
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
