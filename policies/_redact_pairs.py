"""Finding the value of each ``key: value`` pair in text, whatever the syntax around it.

One scan finds every key followed by a separator (``=``, ``:``, ``=>``, ``:=``), quoted
(``"key"``, ``'key'``, ``\\"key\\"`` inside a JSON string or a ``repr``, at any depth of
escaping) or not; when the key names a
credential, its value is replaced by ``[REDACTED]``. Where the value ends depends on what
it is, read from its first character, and not on a parse of the whole text -- so a
document cut short, after a byte order mark, inside prose or escaped inside another
string is read the same way:

- a quoted string (``"..."``, ``'...'``, TOML's ``\"\"\"...\"\"\"``, an escaped
  ``\\"...\\"``) ends at its closing quote, one escaped as deeply as the opening one;
  its quotes stay;
- an object or a list (``{``, ``[``) ends at its matching bracket, strings inside it
  skipped, and is replaced whole (by ``"[REDACTED]"`` after a ``"``-quoted key, so JSON
  stays JSON);
- anything else after a key that starts a line (an INI, TOML or YAML line, an HTTP
  header) runs to the end of the line, or after ``=`` to a ``&name=`` that goes on a
  query string; a ``key=value`` without a space (``.env``, a shell assignment,
  ``?api_key=...&``, ``password='x'``) and any pair within a line end at the next space
  or delimiter.

A value that never ends (an unclosed quote or bracket, text cut short) runs to the end of
the text: redacting too much is the safe mistake. Where a key may stand keeps prose
readable: a quoted key only opens a text, a line, or an entry (after ``{``, ``[``, ``(``,
``,``), so ``field 'password': expected a string`` stays whole; an unquoted key before
``:`` needs a space after it unless it starts a line (YAML's rule, which keeps
``{{secret:NAME}}`` and ``https://`` whole).
"""

from __future__ import annotations

import re
from collections.abc import Callable

REDACTED = "[REDACTED]"

_KEY = re.compile(
    r"""(?P<q>\\{0,7}["'])(?P<qkey>[^"'\\\r\n=:]{1,64})(?P=q)\s*(?P<qsep>=>|:=|[:=])"""
    r"""|(?<![\w.])(?P<key>[A-Za-z_][\w.\-]{0,63})[ \t]*(?P<sep>=>|:=|=(?!=)|:)"""
)
_TOKEN_END = re.compile(r"""[\s&;,"'<>{}\[\]()|\\]""")
_LINE_END = re.compile(r"\r|\n|\\[nr]")
_QUERY_LINE_END = re.compile(r"\r|\n|\\[nr]|&(?=[\w.\-]+=)")
_ESCAPED_QUOTE = re.compile(r"""\\{0,7}["']""")
_BRACKETS = re.compile(r"""[\\"'{}\[\]()]""")
_OPENERS = "{[(,"
_LINE_STARTS = "\n\r\ufeff"
_LOOK_BACK = 64
"""Characters before a key that are looked at to tell where it stands."""
_OPEN = "{[("


def redact_pairs(text: str, is_secret: Callable[[str], bool]) -> str:
    """``text`` with the value of every pair whose key ``is_secret`` replaced."""
    parts: list[str] = []
    done = 0
    for match in _KEY.finditer(text):
        start = match.start()
        if start < done:
            continue  # inside a value already replaced
        quoted = match["qkey"] is not None
        key = match["qkey"] if quoted else match["key"]
        if not is_secret(key):
            continue
        place = _place(text, start)
        if quoted and place is None:
            continue
        spaced = text[match.end() : match.end() + 1] in (" ", "\t")
        if not quoted and match["sep"] == ":" and place != "line" and not spaced:
            continue
        line = None
        if not quoted and place == "line" and (spaced or match["sep"] != "="):
            line = _QUERY_LINE_END if match["sep"] == "=" else _LINE_END
        value = _value(text, match.end(), quote=match["q"], line=line)
        if value is None:
            continue
        begin, end, marker = value
        parts += [text[done:begin], marker]
        done = end
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


def _place(text: str, start: int) -> str | None:
    """Where a key starting at ``start`` stands: ``line`` (it starts a line, or the text),
    ``entry`` (after ``{``, ``[``, ``(`` or ``,``), or ``None`` (within prose)."""
    floor = max(-1, start - _LOOK_BACK - 1)
    at = start - 1
    while at > floor and text[at] in " \t":
        at -= 1
    if at < 0:
        return "line"
    if at == floor:
        return None
    char = text[at]
    if char in _LINE_STARTS:
        return "line"
    if char == "-" and at + 1 < start:  # YAML's ``- key: value``
        return "line" if _place(text, at) == "line" else None
    if char in "nr" and at > 0 and text[at - 1] == "\\":
        return "line"  # an escaped line break: a file held in a JSON string
    if char in _OPENERS:
        return "entry"
    if text[max(0, at - 5) : at + 1] == "export" and (at < 6 or text[at - 6] in "\n\r"):
        return "line"  # .env's ``export KEY=value``
    return None


def _value(
    text: str, at: int, *, quote: str | None, line: re.Pattern[str] | None
) -> tuple[int, int, str] | None:
    """The span of the value starting at ``at`` (after spaces) and what replaces it;
    ``None``: there is nothing there to replace. ``quote``: how the key was quoted (a
    bracketed value is replaced by a string quoted so); ``line``: the value runs to the
    end of the line, which this finds."""
    size = len(text)
    while at < size and text[at] in " \t":
        at += 1
    if at >= size:
        return None
    char = text[at]
    opening = _ESCAPED_QUOTE.match(text, at)
    if opening is not None:
        token = opening[0]
        if token in ('"', "'") and text.startswith(token * 3, at):
            token *= 3  # TOML's multi-line strings
        begin = at + len(token)
        return _unless_done(text, begin, _closing(text, begin, token), REDACTED)
    if char in _OPEN:
        end = _matching(text, at)
        return at, end, f"{quote}{REDACTED}{quote}" if quote else REDACTED
    if line is not None:
        found = line.search(text, at)
        end = size if found is None else found.start()
        while end > at and text[end - 1] in " \t":
            end -= 1
    else:
        found = _TOKEN_END.search(text, at)
        end = size if found is None else found.start()
    return _unless_done(text, at, end, REDACTED)


def _unless_done(text: str, begin: int, end: int, marker: str) -> tuple[int, int, str] | None:
    """The replacement of ``text[begin:end]``, unless it is empty or already redacted."""
    value = text[begin:end]
    if not value or value == REDACTED or value.startswith("[redacted secret "):
        return None
    return begin, end, marker


def _closing(text: str, at: int, quote: str) -> int:
    """Where the string whose content starts at ``at`` ends (its closing ``quote``), or the
    end of the text. A plain quote is closed by the next one not escaped (an even number
    of backslashes before it); an escaped one (``\\"``, the string is inside another) by
    the next quote with exactly as many backslashes before it."""
    char = quote[-1]
    depth = len(quote) - len(quote.lstrip("\\"))
    if len(quote) == 3 and depth == 0:
        found = text.find(quote, at)
        return len(text) if found < 0 else found
    while True:
        found = text.find(char, at)
        if found < 0:
            return len(text)
        slashes = 0
        while found - slashes - 1 >= at and text[found - slashes - 1] == "\\":
            slashes += 1
        if (slashes % 2 == 0) if depth == 0 else (slashes == depth):
            return found - depth
        at = found + 1


def _matching(text: str, at: int) -> int:
    """The end of the bracketed value opening at ``at`` (just past its matching bracket,
    strings inside skipped), or the end of the text."""
    depth = 0
    size = len(text)
    while True:
        found = _BRACKETS.search(text, at)
        if found is None:
            return size
        at = found.start()
        char = text[at]
        if char == "\\":
            at += 2
        elif char in "\"'":
            at = _closing(text, at + 1, char) + 1
        elif char in _OPEN:
            depth += 1
            at += 1
        else:
            depth -= 1
            at += 1
            if depth <= 0:
                return at
