"""The pipeline's own lines beside a tool's text, and tool text that could pass for them.

A model reads, beside what a tool printed, lines that the pipeline (and the provider
adapters, which render its results) write themselves::

    [output truncated — original size: 142,857 bytes]      the truncation marker
    [shown: the first 65,536 bytes]                         (toolcage.policies)
    [full output: call tool_output_read with handle "out_5f1c9a2e4b7d" to read more]
    [image omitted: 31,457,280 bytes of image/png, ...]     an image over the limit
    [details] {"url": "https://example.com/", ...}          a result's details

A tool's text can say anything -- a web page, an HTTP body, an MCP server's answer, a
command's output may hold the same words -- and a model that reads a forged ``[details]``
line, or a forged pointer to "the full output", cannot tell it from the pipeline's. So every
line of a tool's text that could pass for one of these is escaped, for every tool, before
the pipeline adds a line of its own (:func:`neutralise`, which :mod:`._bounds` applies to
each text block and error message of a result): a backslash goes before its bracket::

    \\[details] {"status": 200}

It stays readable, and it reads as the tool's: a line of the pipeline's begins with its
bracket. A line could pass for one when, after whatever spaces, controls and invisible
formatting characters (Unicode Cf) open it, it has ``[`` -- or U+FF3B or U+FE47, which
Unicode folds to it -- and then the first words of a marker (``output truncated``,
``shown``, ``full output``, ``image omitted``, ``details``): in any case, spaced or not,
with such characters between their letters, or in letters Unicode folds to ASCII (NFKC:
fullwidth, mathematical, circled ones). A line starts at the start of a text block and after
each break a reader may take for one: ``\\n``, ``\\r``, ``\\v``, ``\\f``, U+001C-U+001E,
U+0085, U+2028, U+2029. Escaping an escaped line changes nothing, so text that passes the
pipeline twice (read back through ``tool_output_read``) is escaped once.

That includes the notes a tool writes about its own output -- the shell's head-and-tail
note, a guest's output cap, web_fetch's note of a body cut at its byte limit: they reach the
model escaped, as the tool's lines they are.

Limits: only a line's start counts (a marker's words inside a line are text); letters that
merely look alike (a Cyrillic U+0435 in ``details``) and brackets of other shapes are not
folded; at most :data:`WINDOW` characters after a bracket are read.

Cost: a text without ``[`` (and its look-alikes) is read once, by ``str.__contains__``.
Otherwise the regular expression engine skips from bracket to bracket and, for ASCII text,
matches a marker's words there in C; only a bracket that leads a marker's words is looked at
further (is it at a line's start?). Time is linear in the text in every case: a run of
unseen characters is walked back over for the one bracket it precedes.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from ._display import FORMAT_RANGES, char_class

DETAILS = "[details]"
"""What the line of a result's details begins with (``providers.base.details_text``)."""

WORDS = ("outputtruncated", "shown", "fulloutput", "imageomitted", "details")
"""The first words of each of the pipeline's lines, folded (see the module docstring)."""

WINDOW = 96
"""Characters after a bracket read for a marker's words."""

_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
"""Where a new line starts."""
_UNSEEN_RANGES = (
    (0x00, 0x09),
    (0x0E, 0x1B),
    (0x1F, 0x20),
    (0x7F, 0x84),
    (0x86, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    *FORMAT_RANGES,
)
"""What a reader may not see before a bracket or between letters: spaces, controls and
format characters -- all but the line breaks."""
_UNSEEN = frozenset(chr(c) for low, high in _UNSEEN_RANGES for c in range(low, high + 1))
_UNSEEN_RUN = re.compile(f"[{char_class(_UNSEEN_RANGES)}]+")

_ASCII_UNSEEN = "\\x00-\\x09\\x0e-\\x1b\\x1f \\x7f"
_ASCII_MARK = re.compile(
    f"\\[(?=[{_ASCII_UNSEEN}osfidOSFID])[{_ASCII_UNSEEN}]*(?:"
    + "|".join(f"[{_ASCII_UNSEEN}]*".join(f"[{c}{c.upper()}]" for c in w) for w in WORDS)
    + ")"
)
"""In ASCII text: a bracket and a marker's words. The look at the character after the bracket
comes first, and the letters are classes rather than ``re.IGNORECASE``: most brackets (of
JSON, code, links) fail there, and the search goes on to the next at once."""


@functools.cache
def _marks() -> dict[str, re.Pattern[str]]:
    """In any text: a bracket (or a look-alike) and what may begin a marker's words, which
    :func:`_is_marker` reads on. Led by a literal character, each search skips from one
    bracket to the next as fast as ``str.find``. Compiled on the first text that is not ASCII
    (their wide classes take milliseconds to compile, which a process that sees none does not
    spend)."""
    return {
        bracket: re.compile(
            f"{re.escape(bracket)}[{char_class(_UNSEEN_RANGES)}]*[osfidOSFID\\x80-\\U0010ffff]"
        )
        for bracket in ("[", "\uff3b", "\ufe47")
    }


def neutralise(text: str) -> str:
    """``text`` with every line that could pass for one of the pipeline's escaped (see the
    module docstring); ``text`` itself when it has none."""
    if text.isascii():
        if "[" not in text:
            return text
        found = [m.start() for m in _ASCII_MARK.finditer(text)]
    else:
        found = [
            m.start()
            for bracket, search in _marks().items()
            if bracket in text
            for m in search.finditer(text)
            if _is_marker(text, m.start() + 1)
        ]
    marked = [at for at in found if _starts_line(text, at)]
    if not marked:
        return text
    parts: list[str] = []
    last = 0
    for at in sorted(marked):
        parts += (text[last:at], "\\")
        last = at
    parts.append(text[last:])
    return "".join(parts)


def _starts_line(text: str, at: int) -> bool:
    """Whether only unseen characters stand between the start of a line and ``at``."""
    while at > 0 and text[at - 1] in _UNSEEN:
        at -= 1
    return at == 0 or text[at - 1] in _BREAKS


def _is_marker(text: str, start: int) -> bool:
    """Whether the text from ``start`` (just past a bracket) begins with a marker's words,
    once what is unseen is left out and the rest folded (NFKC, then case)."""
    head = _UNSEEN_RUN.sub("", text[start : start + WINDOW])
    if not head.isascii():
        head = unicodedata.normalize("NFKC", head)
    return head.casefold().startswith(WORDS)
