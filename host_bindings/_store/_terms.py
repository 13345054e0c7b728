"""What a text's searchable terms are: one definition for the keyword index, for keyword
queries and for the hash embedder, so a note and a query of the same text always meet.

Folding (:func:`fold`) makes equal what a reader takes as equal: the text is put in
Unicode NFKC form (so decomposed text, as pasted from macOS, full-width letters and
ligatures are the composed, plain ones) and case-folded (``str.casefold``: ``STRASSE``
and ``straße`` are one word); then the accents and vowel points readers routinely leave
out are dropped -- the combining marks of Latin, Greek and Cyrillic, Hebrew points and
Arabic harakat (``Café`` and ``cafe`` are one word) -- with the invisible format
characters (soft hyphens, zero-width joiners, direction marks) and variation selectors.
Other marks (Indic vowel signs, Thai vowels and tones, Japanese voicing) are letters in
effect, and stay.

The terms (:func:`terms`) of the folded text, in order:

- a *word*: a run of letters and digits with the marks that follow them (``_`` and
  punctuation separate words);
- in a script written without spaces between words (Chinese, Japanese kana, Korean
  Hangul, Thai, Lao, Khmer, Myanmar), each character, then each pair of neighbouring
  characters (with their marks), so a query of any word of such a text finds it without
  a dictionary to find the word boundaries: ``東京の天気`` is ``東``, ``京``, ``の``,
  ``天``, ``気``, ``東京``, ``京の``, ``の天``, ``天気``; a query ``天気`` is ``天``, ``気``,
  ``天気``;
- each symbol outside ASCII (emoji, arrows, ``★``, ``✓``, ``€``) on its own; ASCII's
  own symbols (``$+<=>^`|~``) only separate words, as punctuation does: they fill code
  and markup, and would crowd every document's terms.

A text with none of these (``?!``, ``---``) is one term: its whole text, whitespace
collapsed, so it is found by its own text. A term longer than :data:`MAX_TERM_CHARS`
is kept whole, as its first characters and a digest of all of it, so a long word
matches exactly that word, and the index holds short keys.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import operator
import re
import unicodedata
from collections.abc import Iterator, Sequence

MAX_TERM_CHARS = 64
"""A longer term is its first characters, ``#`` and a digest of it all, this long."""
_DIGEST_BYTES = 16

_NO_SPACES = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1100-\u11ff"  # Hangul jamo
    "\u1780-\u17ff"  # Khmer
    "\u3005-\u3007\u3040-\u30ff\u31f0-\u31ff"  # iteration marks, kana
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"  # CJK ideographs, Hangul
    "\U00020000-\U0003134f"  # CJK ideographs, extensions
)
"""Scripts written without spaces between words (Korean has spaces, but its particles
attach to the words they follow)."""

_DROPPED_MARK_BLOCKS = (
    (0x0300, 0x036F),  # combining diacritical marks (Latin, Greek, Cyrillic)
    (0x0483, 0x0489),  # Cyrillic
    (0x0591, 0x05C7),  # Hebrew points and accents
    (0x0610, 0x061A),  # Arabic
    (0x064B, 0x065F),  # Arabic harakat
    (0x0670, 0x0670),
    (0x06D6, 0x06ED),
    (0x1AB0, 0x1AFF),  # combining diacritical marks, extended
    (0x1DC0, 0x1DFF),  # and supplement
    (0x20D0, 0x20FF),  # combining marks for symbols
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFE20, 0xFE2F),  # combining half marks
    (0xE0100, 0xE01EF),  # variation selectors supplement
)
"""Where the nonspacing marks that folding drops live (other marks stay)."""

_ASCII_WORD = re.compile(r"[a-z0-9]+")
_NO_SPACES_CHAR = re.compile(f"[{_NO_SPACES}]")
_GLUED = frozenset({"Mn", "Mc", "Me", "Cf"})


class _Patterns:
    """The character classes folding and terms need, built from the running Python's
    Unicode database on first use (a scan of about 130,000 code points, some 40 ms):
    spelled out here they would lag behind the normalisation they work with."""

    def __init__(self) -> None:
        dropped: list[tuple[int, int]] = []
        marks: list[tuple[int, int]] = []
        symbols: list[tuple[int, int]] = []
        for category, first, last in _category_runs():
            if category == "Cf":
                dropped.append((first, last))
            elif category == "Mn":  # dropped inside the blocks, kept elsewhere
                for lo, hi in _DROPPED_MARK_BLOCKS:
                    if lo <= last and first <= hi:
                        dropped.append((max(lo, first), min(hi, last)))
                marks += _outside(first, last, _DROPPED_MARK_BLOCKS)
            elif category[0] == "M":
                marks.append((first, last))
            elif category[0] == "S":
                symbols.append((first, last))
        self.dropped = re.compile(f"{_class(dropped)}+")
        mark = _class(marks)
        self.token = re.compile(
            f"([^\\W_{_NO_SPACES}]+(?:{mark}+[^\\W_{_NO_SPACES}]*)*)"  # a word
            f"|((?:[{_NO_SPACES}]{mark}*)+)"  # a run of a script without spaces
            f"|({_class(symbols)})"  # a symbol
        )
        self.unit = re.compile(f"[{_NO_SPACES}]{mark}*")
        self.mark = re.compile(mark)


@functools.cache
def _patterns() -> _Patterns:
    return _Patterns()


def fold(text: str) -> str:
    """``text`` normalised, case-folded and without the marks readers leave out (see
    above); the same for NFC and NFD spellings of one text."""
    if text.isascii():
        return text.lower()
    # NFKC is NFC of NFKD: decomposed first (quick for most text, where NFKC's own pass
    # is not: it recomposes what it took apart), the marks are dropped in between.
    folded = unicodedata.normalize("NFKD", text).casefold()
    if not unicodedata.is_normalized("NFKD", folded):  # case folding composed something
        folded = unicodedata.normalize("NFKD", folded)
    folded = _patterns().dropped.sub("", folded)
    if unicodedata.is_normalized("NFC", folded):
        return folded
    return unicodedata.normalize("NFC", folded)


def terms(text: str) -> list[str]:
    """The terms of ``text``, in order (see above); none for blank text."""
    folded = fold(text)
    if folded.isascii():
        found = [_bounded(word) for word in _ASCII_WORD.findall(folded)]
    else:
        patterns = _patterns()
        marked = patterns.mark.search(folded) is not None  # else a run's units are its chars
        found = []
        for word, run, symbol in patterns.token.findall(folded):
            if word or symbol:
                found.append(_bounded(word) if word else symbol)
                continue
            units = patterns.unit.findall(run) if marked else list(run)
            pairs = list(map(operator.add, units, units[1:]))
            found += map(_bounded, units + pairs) if marked else units + pairs
    if not found:
        whole = " ".join(folded.split())
        found = [_bounded(whole)] if whole else []
    return found


def word_around(text: str, at: int) -> tuple[int, int]:
    """The span of what a cut of ``text`` before ``text[at]`` would split: a word (letters,
    digits and marks, not of a script without spaces), or a character and its marks;
    ``(at, at)`` when the cut splits neither. Cutting at either end keeps terms whole."""
    if not 0 < at < len(text):
        return at, at
    if not _glued(text[at]) and not (_in_word(text[at - 1]) and _in_word(text[at])):
        return at, at
    start = at
    while start > 0 and _glued(text[start - 1]):
        start -= 1
    start = max(start - 1, 0)  # the character the marks belong to
    word = _in_word(text[start])
    while word and start > 0 and _in_word(text[start - 1]):
        start -= 1
    end = at
    while end < len(text) and (_glued(text[end]) or (word and _in_word(text[end]))):
        end += 1
    return start, end


def _glued(char: str) -> bool:
    """A mark or an invisible format character: part of the character before it."""
    return not char.isascii() and unicodedata.category(char) in _GLUED


def _in_word(char: str) -> bool:
    return _glued(char) or (char.isalnum() and _NO_SPACES_CHAR.match(char) is None)


def _bounded(term: str) -> str:
    """``term``, or when it is longer than :data:`MAX_TERM_CHARS`, its first characters,
    ``#`` and a digest of all of it."""
    if len(term) <= MAX_TERM_CHARS:
        return term
    digest = hashlib.blake2b(term.encode(), digest_size=_DIGEST_BYTES).hexdigest()
    return f"{term[: MAX_TERM_CHARS - len(digest) - 1]}#{digest}"


def _category_runs() -> Iterator[tuple[str, int, int]]:
    """``(category, first, last)`` of each run of code points past ASCII of one general
    category (marks, symbols and format characters past U+1FFFF are only in plane 14)."""
    for low, high in ((0x80, 0x20000), (0xE0000, 0xE0200)):
        categories = map(unicodedata.category, map(chr, range(low, high)))
        code = low
        for category, run in itertools.groupby(categories):
            size = sum(1 for _ in run)
            yield category, code, code + size - 1
            code += size


def _outside(first: int, last: int, blocks: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``first..last`` outside every one of the sorted ``blocks``."""
    parts: list[tuple[int, int]] = []
    for lo, hi in blocks:
        if hi < first or last < lo:
            continue
        if first < lo:
            parts.append((first, lo - 1))
        first = hi + 1
    if first <= last:
        parts.append((first, last))
    return parts


def _class(ranges: Sequence[tuple[int, int]]) -> str:
    """A regex matching one character of the code point ``ranges`` (adjacent ones merged).
    ``re`` tests a class of BMP characters in a bitmap, but one reaching past the BMP range
    by range: the ranges past it are tested only for a character past it."""
    merged: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    bmp = "".join(f"\\u{lo:04x}-\\u{min(hi, 0xFFFF):04x}" for lo, hi in merged if lo <= 0xFFFF)
    past = "".join(f"\\U{max(lo, 0x10000):08x}-\\U{hi:08x}" for lo, hi in merged if hi > 0xFFFF)
    return f"(?:[{bmp}]|(?=[\\U00010000-\\U0010ffff])[{past}])" if past else f"[{bmp}]"
