"""The ``memory`` binding: a user's notes, saved, replaced, deleted and searched.

Every request reaches only the notes of the call's ``user_id`` (from its
:class:`CallState`, never from the guest), so another user's note id is an unknown id; a
search ranks them by that user's rows alone. A save or an update stores the call's whole
principal as the note's writer (any agent of the user reaches the note all the same).
Requests are the tools' arguments::

    save    {"content": "...", "tags": ["food"]}
    update  {"note_id": "note-...", "content": "...", "tags": [...]}
    delete  {"note_id": "note-..."}
    search  {"query": "...", "top_k": 5, "tags": [...], "include_conversation": false}

and each result is ``{"ok": true, "text": ...}`` with the tool's output: a JSON object for
``save``/``update``/``delete``, a JSON array of ``{text, source, score, note_id, tags,
created_at, updated_at}`` for ``search`` (with a line saying so when the search was
keyword-only). Search hits that would not fit the output limit together have their texts
cut, evenly (see :mod:`._fit`): a cut hit carries ``full_chars``, and a last line says how
to see more. With ``include_conversation`` the array also holds the user's recorded
conversation events (``source`` ``"conversation"``, ``note_id`` null, with their
``session_id`` and ``role``), ranked with the notes. A refused request is ``{"ok": false,
...}`` with a ``validation_error`` a model can act on, or an ``execution_error`` when the
store or the embedder failed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import wasmtime

from ._abi import module_name
from ._base import CallState
from ._fit import MARGIN, fit_texts
from ._note_text import (
    chunks_of,
    content_of,
    looks_like_note_id,
    new_note_id,
    note_id_of,
    tag_filter_of,
    tags_of,
)
from ._results import JsonHandler, define_json_calls, presented
from ._state import InvalidRequest, StateServices, answering
from ._store import ConversationHit, Embedder

MAX_TOP_K = 20
EVENTS_EMBEDDED_PER_SEARCH = 64
"""A search with ``include_conversation`` embeds at most this many new events first."""
KEYWORD_ONLY = (
    "keyword-only search: no embedder is configured ([state.embedder] kind), so only notes "
    "(and conversation turns) sharing words with the query were found"
)


def _unknown(note_id: str) -> InvalidRequest:
    return InvalidRequest(
        f"no note {note_id!r}: it does not exist or was deleted (memory_search lists note ids)"
    )


class MemoryBinding:
    """Capability ``memory``: ``toolcage_memory_v1.save``/``update``/``delete``/``search``.

    Its :meth:`searching` form, what a worker session's guests get, defines ``search``
    alone: a guest importing ``save``, ``update`` or ``delete`` fails to link.
    """

    name = "memory"

    def __init__(self, services: StateServices, *, search_only: bool = False) -> None:
        self._services = services
        self._search_only = search_only
        if search_only:
            # Its own name: the runner keys a linked module by its bindings' names.
            self.name = "memory:search"

    def searching(self) -> MemoryBinding:
        """This binding in its search-only form (see the class docstring)."""
        return MemoryBinding(self._services, search_only=True)

    def calls(self) -> dict[str, JsonHandler]:
        """The calls this form answers, by import name."""
        calls = {"search": answering(self.search)}
        if not self._search_only:
            calls |= {
                "save": answering(self.save),
                "update": answering(self.update),
                "delete": answering(self.delete),
            }
        return calls

    def define(self, linker: wasmtime.Linker) -> None:
        define_json_calls(linker, module_name("memory"), self.calls())

    def save(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """Save a new note of the call's user."""
        content, tags = content_of(request.get("content")), tags_of(request.get("tags"))
        chunks, vectors, model = self._embedded(content, state.deadline)
        note_id = new_note_id()
        record = self._services.store.save_note(
            state.principal, note_id, chunks, vectors, tags, model
        )
        message = f"saved note {record.note_id}{_described(record.chunk_count, tags)}"
        return _changed(record.note_id, message, "created", "Saved")

    def update(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """Replace a note of the call's user under the same id."""
        note_id = note_id_of(request.get("note_id"))
        content, tags = content_of(request.get("content")), tags_of(request.get("tags"))
        if not looks_like_note_id(note_id):
            raise _unknown(note_id)
        chunks, vectors, model = self._embedded(content, state.deadline)
        record = self._services.store.replace_note(
            state.principal, note_id, chunks, vectors, tags, model
        )
        if record is None:
            raise _unknown(note_id)
        message = f"updated note {record.note_id}{_described(record.chunk_count, tags)}"
        return _changed(record.note_id, message, "modified", "Updated")

    def delete(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """Delete a note of the call's user."""
        note_id = note_id_of(request.get("note_id"))
        if not looks_like_note_id(note_id) or not self._services.store.delete_note(
            state.principal.user_id, note_id
        ):
            raise _unknown(note_id)
        return _changed(note_id, f"deleted note {note_id}", "deleted", "Deleted", deleted=True)

    def search(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """The call's user's notes best matching a query, as the tool's JSON array."""
        query = request.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InvalidRequest("query is empty; say what to look for")
        top_k = request.get("top_k", 5)
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_TOP_K:
            raise InvalidRequest(f"top_k must be a whole number from 1 to {MAX_TOP_K}")
        include_conversation = request.get("include_conversation", False)
        if not isinstance(include_conversation, bool):
            raise InvalidRequest("include_conversation must be true or false")
        tags = tag_filter_of(request.get("tags"))
        embedder = self._services.embedder
        vector = None if embedder is None else embedder.embed([query], state.deadline)[0]
        config = self._services.config
        store = self._services.store
        hits = store.search_notes(
            state.principal.user_id,
            query,
            vector,
            top_k=top_k,
            tags=tags,
            vector_weight=config.vector_weight,
            fts_weight=config.fts_weight,
            model=None if embedder is None else embedder.model,
        )
        found: list[dict[str, Any]] = [
            {
                "text": hit.text,
                "source": "note",
                "score": hit.score,
                "note_id": hit.note_id,
                "tags": list(hit.tags),
                "created_at": hit.created_at,
                "updated_at": hit.updated_at,
            }
            for hit in hits
        ]
        if include_conversation and not tags:  # events carry no tags: none matches a filter
            if embedder is not None and config.vector_weight > 0:
                self._embed_new_events(state, embedder)
            events = store.search_conversation(
                state.principal.user_id,
                query,
                vector,
                top_k=top_k,
                vector_weight=config.vector_weight,
                fts_weight=config.fts_weight,
                model=None if embedder is None else embedder.model,
            )
            found = _fused(found, events, top_k)
        for hit in found:
            hit["score"] = round(hit["score"], 6)
        lines = [] if embedder is not None else [KEYWORD_ONLY]
        budget = state.reply_bytes - MARGIN - len(KEYWORD_ONLY.encode())
        cut, dropped = fit_texts(found, "text", budget)
        if cut or dropped:
            lines.append(_fitted(cut, dropped, len(found)))
        text = "\n".join([json.dumps(found, ensure_ascii=False), *lines])
        note_ids = [hit["note_id"] for hit in found if hit["note_id"] is not None]
        details = {
            "results": len(found),
            "notes": len(note_ids),
            "note_ids": note_ids,
            "keyword_only": embedder is None,
        }
        shown = f"Found {_count(len(found), 'result')} ({_count(len(note_ids), 'note')})"
        return presented(text, details, shown)

    def _embed_new_events(self, state: CallState, embedder: Embedder) -> None:
        """Embed the user's newest conversation events that have no vector of the
        embedder's model yet (at most :data:`EVENTS_EMBEDDED_PER_SEARCH`): turns are
        recorded as text only, so the loop never waits on the embedder."""
        store = self._services.store
        pending = store.events_to_embed(
            state.principal.user_id, embedder.model, embedder.dimensions, EVENTS_EMBEDDED_PER_SEARCH
        )
        if pending:
            vectors = embedder.embed([text for _, text in pending], state.deadline)
            store.save_event_vectors(
                state.principal.user_id,
                embedder.model,
                [
                    (event_id, vector)
                    for (event_id, _), vector in zip(pending, vectors, strict=True)
                ],
            )

    def _embedded(
        self, content: str, deadline: float
    ) -> tuple[list[str], list[list[float]] | None, str | None]:
        """The chunks of ``content``, their vectors and the embedder's model (or none)."""
        chunks = chunks_of(content, self._services.config.chunk_chars)
        embedder = self._services.embedder
        if embedder is None:
            return chunks, None, None
        return chunks, embedder.embed(chunks, deadline), embedder.model


def _fused(
    notes: list[dict[str, Any]], events: Sequence[ConversationHit], top_k: int
) -> list[dict[str, Any]]:
    """Notes and conversation events in one ranking: both scores are weighted reciprocal
    ranks over a vector and a keyword list, so they compare; a note wins a tie."""
    conversation: list[dict[str, Any]] = [
        {
            "text": event.text,
            "source": "conversation",
            "score": event.score,
            "note_id": None,
            "tags": [],
            "created_at": event.created_at,
            "updated_at": event.created_at,
            "session_id": event.session_id,
            "role": event.role,
        }
        for event in events
    ]
    ranked = sorted(
        enumerate([*notes, *conversation]), key=lambda entry: (-entry[1]["score"], entry[0])
    )
    return [hit for _, hit in ranked[:top_k]]


def _fitted(cut: int, dropped: int, shown: int) -> str:
    """The hint of a search answer fitted to the output limit."""
    what = [f"{cut} of {shown} texts were cut (each has its full_chars)"] if cut else []
    if dropped:
        what.append(f"the {dropped} lowest-ranked hits were left out")
    return (
        f"to fit the output limit, {' and '.join(what)}; search with a smaller top_k, or a "
        "narrower query, to see more of each"
    )


def _described(chunks: int, tags: Sequence[str]) -> str:
    parts = [f"{chunks} chunks"] if chunks > 1 else []
    if tags:
        parts.append("tags: " + ", ".join(tags))
    return f" ({'; '.join(parts)})" if parts else ""


def _changed(note_id: str, message: str, action: str, verb: str, **more: Any) -> dict[str, Any]:
    """The answer of a save, update or delete of note ``note_id``."""
    text = json.dumps({"note_id": note_id, **more, "message": message}, ensure_ascii=False)
    return presented(
        text, {"note_id": note_id}, f"{verb} note {note_id}", [("memory", note_id, action)]
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
