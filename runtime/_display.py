"""Display lines: one line that shows a person what it says.

A result's ``display`` line ("Fetched <title> (12 KB)") goes to UIs, logs and terminals, and
often quotes what a tool was given: a page's title, a file name, a command. Such text may hold
characters that change what a person sees without being seen themselves: a control sequence
(CSI is ``ESC [``, or the single C1 character U+009B) that a terminal acts on, a bidirectional
override (U+202E) that shows ``exe.txt`` for ``txt.exe``, a zero-width space or joiner, a line
separator that starts a second line. The pipeline makes every display line one line of
visible text (:func:`display_line`, from :mod:`._bounds`):

- a C0 control or DEL becomes a space (it cannot be shown; the line stays one line);
- a C1 control (U+0080-U+009F), a line or paragraph separator (U+2028, U+2029) and every
  invisible formatting character (Unicode category Cf: bidirectional controls, zero-width
  characters, the byte order mark, tag characters, ...) is written as its escape, ``\\uHHHH``
  (``\\UHHHHHHHH`` past U+FFFF) -- the form the guest tools give names (``toolcage.h``);
- everything else is kept: letters of every script, emoji, spaces.

The guest SDK applies the same rule to a guest's display line (``tc_tool_main`` in
``wasm_tools/sdk/toolcage.c``), so a built-in tool's line arrives already in this form;
the host applies it again to every tool's line, since a guest, an MCP server or a host tool
may send anything. A backslash is kept as it is: a display line is read by people, and
names in it already come escaped by the tools.

Limits: visible characters that look alike (a Cyrillic U+0430 for a Latin ``a``) and
combining marks are kept. A joiner is escaped like any format character, so an emoji joined
by U+200D shows as its parts with ``\\u200d`` between them, and a zero-width non-joiner in
Persian or Indic text as ``\\u200c``.
"""

from __future__ import annotations

import re

FORMAT_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)
"""The characters of Unicode category Cf (format), as of Unicode 15.1: the same table as
``format_char`` in the guest SDK."""


def char_class(ranges: tuple[tuple[int, int], ...]) -> str:
    """``ranges`` as the inside of a regular expression's character class."""
    return "".join(
        re.escape(chr(low)) if low == high else f"{re.escape(chr(low))}-{re.escape(chr(high))}"
        for low, high in ranges
    )


INVISIBLE = "\\x80-\\x9f\\u2028\\u2029" + char_class(FORMAT_RANGES)
"""The inside of a character class of what a display line escapes: C1 controls, the line
and paragraph separators, format characters."""

_CONTROL = re.compile("[\\x00-\\x1f\\x7f]")
_INVISIBLE = re.compile(f"[{INVISIBLE}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def display_line(text: str) -> str:
    """``text`` as one line of visible text (see the module docstring)."""
    if text.isprintable():  # what nearly every line is: nothing to do
        return text
    text = _CONTROL.sub(" ", text)
    return _INVISIBLE.sub(_escape, text)
