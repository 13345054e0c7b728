"""Keyword search on per-user statistics finds what the shared FTS5 index found.

``keyword_recall_corpus.json`` holds one user's notes and conversation events, and queries
with the answers of the FTS5 ``bm25`` index the store kept before (schema version 5), on
a store holding only that user's rows. On both backends the store answers every query
exactly so -- the same notes and events, in the same order -- when it holds only that
user's rows, and when another user has stored as much again, full of the same words.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from toolcage.host_bindings._store import StateStore

from .conftest import Opener, principal

CORPUS: dict[str, Any] = json.loads(
    (Path(__file__).parent / "keyword_recall_corpus.json").read_text(encoding="utf-8")
)
USER = "ada"


def fill(store: StateStore, *, neighbour: bool) -> None:
    """The corpus's rows of :data:`USER`; with ``neighbour``, bob's notes and events made of
    the same words (shuffled) before, between and after them."""
    rng = random.Random(7)  # noqa: S311 -- a reproducible corpus, not a secret

    def bobs_turn(n: int) -> None:
        if not neighbour:
            return
        note = CORPUS["notes"][n % len(CORPUS["notes"])]
        chunks = [" ".join(rng.sample(c.split(), len(c.split()))) for c in note["chunks"]]
        store.save_note(principal("bob"), f"note-bob-{n}", chunks * 2, None, note["tags"], None)
        event = CORPUS["events"][n % len(CORPUS["events"])]
        store.record_events(principal("bob", "b1"), [(event["role"], event["text"] * 2)])

    for n, note in enumerate(CORPUS["notes"]):
        bobs_turn(n)
        store.save_note(principal(USER), note["note_id"], note["chunks"], None, note["tags"], None)
    for n, event in enumerate(CORPUS["events"]):
        bobs_turn(n + len(CORPUS["notes"]))
        session = principal(USER, event["session_id"])
        store.record_events(session, [(event["role"], event["text"])])
    bobs_turn(-1)


@pytest.mark.parametrize("neighbour", [False, True], ids=["alone", "beside-another-user"])
def test_every_query_finds_what_fts5_found(opener: Opener, neighbour: bool) -> None:
    store = opener()
    fill(store, neighbour=neighbour)
    texts = [event["text"] for event in CORPUS["events"]]
    for query in CORPUS["queries"]:
        asked = query["query"], query["top_k"], query["tags"]
        hits = store.search_notes(USER, asked[0], None, top_k=asked[1], tags=asked[2])
        assert [hit.note_id for hit in hits] == query["found_notes"], asked
        if "found_events" in query:
            found = store.search_conversation(USER, asked[0], top_k=asked[1])
            assert [hit.text for hit in found] == [texts[i] for i in query["found_events"]], asked
