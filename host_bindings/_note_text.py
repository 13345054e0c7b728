"""What the memory binding accepts from a guest: note content, tags and ids, checked and
normalised, and long notes cut into chunks.

Each check raises :class:`~._state.InvalidRequest` with a message a model can act on.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from typing import Any

from ._state import InvalidRequest
from ._store._terms import word_around

MAX_TAGS = 16
"""Tags a note or a search may carry, after normalisation."""
MAX_TAG_CHARS = 64
MAX_CONTENT_CHARS = 100_000
"""The longest note, in characters."""

_NOTE_ID = re.compile(r"^note-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_BREAKS = ("\n\n", "\n", ". ", "? ", "! ", "。", "！", "？", "; ", ", ", "，", " ")


def new_note_id() -> str:
    """``note-`` and a random UUID."""
    return f"note-{uuid.uuid4()}"


def note_id_of(value: Any) -> str:
    """The note id a request names: a string (its shape is not checked here, so an id of
    the wrong shape is unknown like any other)."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest("note_id must be a note id such as note-1b4e28ba-2fa1-11d2-883f-...")
    return value.strip()


def looks_like_note_id(value: str) -> bool:
    """Whether ``value`` has the shape of an id :func:`new_note_id` makes."""
    return _NOTE_ID.match(value) is not None


def content_of(value: Any) -> str:
    """Note content: non-empty text of at most :data:`MAX_CONTENT_CHARS` characters."""
    if not isinstance(value, str):
        raise InvalidRequest("content must be a string")
    text = value.strip()
    if not text:
        raise InvalidRequest("content is empty; write what the note should remember")
    if len(text) > MAX_CONTENT_CHARS:
        raise InvalidRequest(
            f"content is {len(text):,} characters; a note holds at most {MAX_CONTENT_CHARS:,} "
            "(save it as several notes)"
        )
    return text


def tags_of(value: Any) -> tuple[str, ...]:
    """Tags in NFC form, trimmed, lowercased and deduplicated (first occurrence kept, empty
    ones dropped); at most :data:`MAX_TAGS` of at most :data:`MAX_TAG_CHARS` characters."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise InvalidRequest("tags must be a list of strings")
    seen: dict[str, None] = {}
    for raw in value:
        tag = unicodedata.normalize("NFC", raw).strip().lower()
        if len(tag) > MAX_TAG_CHARS:
            raise InvalidRequest(f"tag {tag[:20]!r}... is longer than {MAX_TAG_CHARS} characters")
        if tag:
            seen.setdefault(tag)
    if len(seen) > MAX_TAGS:
        raise InvalidRequest(f"{len(seen)} distinct tags given; a note carries at most {MAX_TAGS}")
    return tuple(seen)


def tag_filter_of(value: Any) -> tuple[str, ...]:
    """A search's tags, as :func:`tags_of` gives them; an empty one is refused, not dropped:
    dropping it would widen the search to notes the filter was meant to leave out."""
    tags = tags_of(value)
    for n, raw in enumerate(value or ()):
        if not raw.strip():
            raise InvalidRequest(
                f"tags[{n}] is empty; a search keeps only notes carrying every tag given "
                "(leave tags out to search every note)"
            )
    return tags


def chunks_of(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters, each cut at the last
    paragraph, line, sentence or word break of its second half when there is one. A cut
    never splits a word or a character from its marks (:func:`~._store._terms.word_around`):
    it moves before the word, or after it when the word fills the piece, so a word longer
    than ``size`` is a piece of its own, and is indexed whole."""
    chunks: list[str] = []
    rest = text
    while len(rest) > size:
        window = rest[:size]
        cut = next((window.rfind(b) + len(b) for b in _BREAKS if window.rfind(b) > size // 2), 0)
        if not cut:
            start, end = word_around(rest, size)
            cut = start or end
        piece = rest[:cut].strip()
        if piece:
            chunks.append(piece)
        rest = rest[cut:]
    if rest.strip():
        chunks.append(rest.strip())
    return chunks
