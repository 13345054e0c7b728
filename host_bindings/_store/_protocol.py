"""The state store's seam: what memory, scratchpad and search tools ask of a backend.

A :class:`StateStore` is synchronous and thread-safe: host functions call it from the
worker thread that runs a guest, several guests at once. A write takes the call's whole
:class:`~toolcage.policies.Principal` -- its ``user_id`` (and, for events and pads, its
``session_id``) says whose rows these are, and the principal is stored with them as their
writer, for accountability only -- and a read or a delete takes the call's ``user_id``.
Every statement a backend runs is scoped by the user in SQL, so another user's note id
behaves exactly like an unknown one, and a search ranks the user's rows by the user's own
statistics (see :mod:`._keywords`), so it tells nothing of other users' rows.

Notes are stored as chunks (the caller chunks and embeds; the store keeps text, tags and
vectors). Timestamps are the backend's clock, ISO 8601 in UTC
(``2026-11-23T15:04:05.123Z``).

Conversation events (what the user said in a turn, what the assistant answered) are
recorded by the agent loop as text, embedded later by whoever searches them
(:meth:`StateStore.events_to_embed`), and searched across the user's sessions; they are
not notes: no note id, no tags, untouched by the note methods. An event's vector is stored
with its model and dimensions and compared only with a query vector of the same.

Vectors are tagged with the embedder's ``model``: a store that holds vectors of one model
refuses to save or search with another (:class:`EmbeddingModelMismatch`), so the vectors of
two models are never compared with each other.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from toolcage.policies import Principal

from .._backends._errors import StoreError as StoreError
from .._backends._errors import StoreTimeout as StoreTimeout
from .._backends._errors import StoreUnavailable as StoreUnavailable


class EmbeddingModelMismatch(StoreError):
    """The store holds vectors of ``stored`` and was asked to save or search with ``given``."""

    def __init__(self, stored: str, given: str) -> None:
        super().__init__(
            f"the state store holds vectors of embedding model {stored!r}, not {given!r}; "
            "vectors of two models are never mixed: configure the embedder back, or clear "
            "the store's vectors with `StateStore.drop_vectors()` and save notes again"
        )
        self.stored = stored
        self.given = given


@dataclass(frozen=True, slots=True)
class NoteRecord:
    """A saved note, as the store reports it after a save or replace."""

    note_id: str
    """``note-{uuid4}``, chosen by the caller."""
    chunk_count: int
    """How many chunks the note was stored as."""
    tags: tuple[str, ...]
    """The note's tags, as given (the caller normalises them)."""
    model: str | None
    """The embedding model of the note's vectors; ``None`` when it was saved without any."""
    created_at: str
    """When the note was first saved (the backend's clock; a replace keeps it)."""
    updated_at: str
    """When the note was last saved or replaced (the backend's clock)."""


@dataclass(frozen=True, slots=True)
class NoteHit:
    """One note found by :meth:`StateStore.search_notes`: its best-matching chunk."""

    note_id: str
    """The note's id."""
    text: str
    """The text of the note's best-matching chunk."""
    chunk_index: int
    """Which chunk of the note ``text`` is (0-based)."""
    score: float
    """The fused score; higher is better, comparable only within one search."""
    tags: tuple[str, ...]
    """The note's tags."""
    created_at: str
    """When the note was first saved."""
    updated_at: str
    """When the note was last saved or replaced."""
    vector_rank: int | None
    """1-based rank among the vector matches; ``None`` when it was not one."""
    keyword_rank: int | None
    """1-based rank among the keyword matches; ``None`` when it was not one."""


@dataclass(frozen=True, slots=True)
class ConversationHit:
    """One conversation event found by :meth:`StateStore.search_conversation`."""

    session_id: str
    """The session (conversation) it was recorded in."""
    role: str
    """``user`` or ``assistant``."""
    text: str
    """What was said."""
    score: float
    """The fused score, on the scale of :attr:`NoteHit.score`."""
    created_at: str
    """When it was recorded (the backend's clock)."""
    vector_rank: int | None
    """1-based rank among the vector matches; ``None`` when it was not one."""
    keyword_rank: int | None
    """1-based rank among the keyword matches; ``None`` when it was not one."""


@dataclass(frozen=True, slots=True)
class Pad:
    """A session's scratchpad."""

    session_id: str
    """The session it belongs to."""
    items: tuple[str, ...]
    """Its items, in order."""
    updated_at: str
    """When it was last written (the backend's clock)."""


@runtime_checkable
class StateStore(Protocol):
    """Notes and scratchpads of many users, in one database. Thread-safe; close when done."""

    @property
    def url(self) -> str:
        """The URL it was opened with, as configured (never with a secret in it)."""
        ...

    def save_note(
        self,
        principal: Principal,
        note_id: str,
        chunks: Sequence[str],
        vectors: Sequence[Sequence[float]] | None,
        tags: Sequence[str],
        model: str | None,
    ) -> NoteRecord:
        """Store a new note of the principal's user of ``chunks`` (one vector per chunk, of
        ``model``, or none), written by ``principal``."""
        ...

    def replace_note(
        self,
        principal: Principal,
        note_id: str,
        chunks: Sequence[str],
        vectors: Sequence[Sequence[float]] | None,
        tags: Sequence[str],
        model: str | None,
    ) -> NoteRecord | None:
        """Replace the principal's user's note atomically (delete, then save under the same
        id, keeping ``created_at`` and its first writer), written by ``principal``; ``None``
        when the user has no such note."""
        ...

    def delete_note(self, user_id: str, note_id: str) -> bool:
        """Remove every chunk of the user's note; ``False`` when the user has no such note."""
        ...

    def search_notes(
        self,
        user_id: str,
        query_text: str,
        query_vector: Sequence[float] | None,
        *,
        top_k: int,
        tags: Sequence[str] = (),
        vector_weight: float = 1.0,
        fts_weight: float = 1.0,
        model: str | None = None,
        min_similarity: float | None = None,
    ) -> list[NoteHit]:
        """The user's best ``top_k`` notes carrying every tag in ``tags``: vector nearest
        neighbours of ``query_vector`` (of ``model``; cosine similarity at least
        ``min_similarity``, when given) and keyword matches of ``query_text``, fused by
        weighted reciprocal rank. Keyword-only when ``query_vector`` is ``None``; a side
        whose weight is 0 is not searched."""
        ...

    def record_events(self, principal: Principal, events: Sequence[tuple[str, str]]) -> int:
        """Append ``(role, text)`` conversation events of the principal's user and session,
        in order, in one transaction, written by ``principal``; returns how many were
        stored."""
        ...

    def events_to_embed(
        self, user_id: str, model: str, dimensions: int, limit: int
    ) -> list[tuple[int, str]]:
        """``(event id, text)`` of the user's newest ``limit`` events that have no vector
        of ``model`` and ``dimensions`` yet."""
        ...

    def save_event_vectors(
        self, user_id: str, model: str, vectors: Sequence[tuple[int, Sequence[float]]]
    ) -> None:
        """Store ``(event id, vector)`` pairs of ``model`` for the user's events (an id
        of another user's event is ignored), replacing vectors of another model."""
        ...

    def search_conversation(
        self,
        user_id: str,
        query_text: str,
        query_vector: Sequence[float] | None = None,
        *,
        top_k: int,
        vector_weight: float = 1.0,
        fts_weight: float = 1.0,
        model: str | None = None,
        min_similarity: float | None = None,
    ) -> list[ConversationHit]:
        """The user's ``top_k`` conversation events (of any of the user's sessions) best
        matching the query: keyword matches of ``query_text`` and, when ``query_vector``
        is given, the events with a vector of the same ``model`` nearest it, fused as
        :meth:`search_notes` fuses; a side whose weight is 0 is not searched."""
        ...

    def read_pad(self, user_id: str, session_id: str) -> Pad | None:
        """The session's scratchpad, or ``None`` when it has none."""
        ...

    def write_pad(self, principal: Principal, items: Sequence[str]) -> Pad:
        """Replace the scratchpad of the principal's session with ``items``, written by
        ``principal``."""
        ...

    def clear_pad(self, user_id: str, session_id: str) -> bool:
        """Remove the session's scratchpad; ``False`` when it had none."""
        ...

    def stored_model(self) -> tuple[str, int] | None:
        """The embedding model and dimensions of the stored vectors; ``None`` when there
        are none."""
        ...

    def drop_vectors(self) -> int:
        """Forget every stored vector (notes stay, keyword-searchable) and the model they
        were of, so another embedder can be used; returns how many were dropped."""
        ...

    def close(self) -> None:
        """Release connections (idempotent)."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one model."""

    @property
    def model(self) -> str:
        """The model's name, as stored with every vector it makes."""
        ...

    @property
    def dimensions(self) -> int:
        """The length of every vector it makes."""
        ...

    def embed(self, texts: Sequence[str], deadline: float) -> list[list[float]]:
        """One vector per text, in order; gives up by ``deadline`` (``time.monotonic()``)
        with :class:`EmbeddingError`."""
        ...


class EmbeddingError(Exception):
    """The embedder failed or ran out of time."""


def remaining(deadline: float) -> float:
    """Seconds left before ``deadline`` (``time.monotonic()``), never negative."""
    return max(0.0, deadline - time.monotonic())
