"""Conversation events, on every backend: recorded per user and session, found by keyword
across the user's sessions, never another user's, apart from notes (a store of an older
schema is migrated with its events in ``test_migration``)."""

from __future__ import annotations

import time

import pytest
from toolcage.host_bindings._store import HashingEmbedder, StateStore

from .conftest import Opener, principal


def texts(store: StateStore, user: str, query: str, top_k: int = 5) -> list[str]:
    return [hit.text for hit in store.search_conversation(user, query, top_k=top_k)]


class TestConversationEvents:
    def test_a_recorded_turn_is_found_with_its_fields(self, store: StateStore) -> None:
        stored = store.record_events(
            principal("alice", "s1"),
            [
                ("user", "which airline flies to Lisbon?"),
                ("assistant", "TAP flies to Lisbon daily"),
            ],
        )
        assert stored == 2
        [hit] = store.search_conversation("alice", "airline", top_k=5)
        assert (hit.session_id, hit.role, hit.text) == (
            "s1",
            "user",
            "which airline flies to Lisbon?",
        )
        assert hit.keyword_rank == 1
        assert hit.score > 0
        assert hit.created_at.endswith("Z")
        assert sorted(texts(store, "alice", "lisbon")) == [
            "TAP flies to Lisbon daily",
            "which airline flies to Lisbon?",
        ]

    def test_events_of_every_session_of_the_user_are_searched(self, store: StateStore) -> None:
        store.record_events(principal("alice", "s1"), [("user", "my cat is called Miso")])
        store.record_events(
            principal("alice", "s2"), [("assistant", "Miso sounds like a lovely cat")]
        )
        hits = store.search_conversation("alice", "miso", top_k=5)
        assert {hit.session_id for hit in hits} == {"s1", "s2"}

    def test_a_user_never_finds_another_users_events(self, store: StateStore) -> None:
        store.record_events(principal("alice", "s1"), [("user", "alice password hint: pelican")])
        store.record_events(principal("bob", "s1"), [("user", "bob likes the pelican too")])
        assert texts(store, "alice", "pelican") == ["alice password hint: pelican"]
        assert texts(store, "bob", "pelican") == ["bob likes the pelican too"]
        assert texts(store, "carol", "pelican") == []

    def test_events_are_not_notes(self, store: StateStore) -> None:
        store.record_events(principal("alice", "s1"), [("user", "the harbour opens at dawn")])
        assert store.search_notes("alice", "harbour", None, top_k=5) == []
        assert store.delete_note("alice", "note-harbour") is False
        assert texts(store, "alice", "harbour") == ["the harbour opens at dawn"]

    def test_top_k_and_weight_bound_the_hits(self, store: StateStore) -> None:
        store.record_events(
            principal("alice", "s1"), [("user", f"reminder number {n}") for n in range(6)]
        )
        assert len(texts(store, "alice", "reminder", top_k=4)) == 4
        assert store.search_conversation("alice", "reminder", top_k=4, fts_weight=0) == []

    def test_empty_texts_are_skipped_and_roles_checked(self, store: StateStore) -> None:
        assert (
            store.record_events(principal("alice", "s1"), [("user", "  "), ("assistant", "")]) == 0
        )
        with pytest.raises(ValueError, match="role"):
            store.record_events(principal("alice", "s1"), [("system", "be brief")])

    def test_query_words_are_never_fts_syntax(self, store: StateStore) -> None:
        store.record_events(principal("alice", "s1"), [("user", 'owner: NEAR(text) AND "quoted"')])
        assert texts(store, "alice", 'owner: NEAR( "quoted') == ['owner: NEAR(text) AND "quoted"']
        assert texts(store, "alice", "***") == []

    def test_events_survive_reopening(self, opener: Opener) -> None:
        first = opener()
        first.record_events(principal("alice", "s1"), [("assistant", "the parcel ships Tuesday")])
        first.close()
        assert texts(opener(), "alice", "parcel") == ["the parcel ships Tuesday"]


def embed_all(store: StateStore, embedder: HashingEmbedder, user: str) -> int:
    pending = store.events_to_embed(user, embedder.model, embedder.dimensions, 100)
    vectors = embedder.embed([text for _, text in pending], time.monotonic() + 5)
    store.save_event_vectors(
        user, embedder.model, [(i, v) for (i, _), v in zip(pending, vectors, strict=True)]
    )
    return len(pending)


class TestConversationVectors:
    def test_events_are_embedded_once_newest_first(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        store.record_events(principal("alice", "s1"), [("user", "first"), ("assistant", "second")])
        pending = store.events_to_embed("alice", embedder.model, embedder.dimensions, 10)
        assert [text for _, text in pending] == ["second", "first"]
        assert [t for _, t in store.events_to_embed("alice", "m", 384, 1)] == ["second"]
        assert embed_all(store, embedder, "alice") == 2
        assert store.events_to_embed("alice", embedder.model, embedder.dimensions, 10) == []
        assert len(store.events_to_embed("alice", "another-model", 384, 10)) == 2

    def test_an_event_is_found_by_meaning_alone(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        store.record_events(principal("alice", "s1"), [("user", "my automobile is blue")])
        store.record_events(principal("alice", "s2"), [("user", "the weather is fine")])
        embed_all(store, embedder, "alice")
        query = "car"  # a synonym of automobile for the test embedder, no shared word
        assert store.search_conversation("alice", query, None, top_k=5) == []
        [hit] = store.search_conversation(
            "alice",
            query,
            embedder.embed_one(query),
            top_k=5,
            model=embedder.model,
            min_similarity=0.3,
        )
        assert (hit.text, hit.session_id, hit.vector_rank, hit.keyword_rank) == (
            "my automobile is blue",
            "s1",
            1,
            None,
        )

    def test_a_match_on_both_sides_outranks_one_side(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        store.record_events(principal("alice", "s1"), [("user", "my vehicle needs tyres")])
        store.record_events(principal("alice", "s1"), [("user", "the car wash opens at nine")])
        embed_all(store, embedder, "alice")
        hits = store.search_conversation(
            "alice", "car", embedder.embed_one("car"), top_k=5, model=embedder.model
        )
        assert hits[0].text == "the car wash opens at nine"
        assert hits[0].score > hits[1].score

    def test_vectors_of_another_model_or_user_are_never_compared(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        store.record_events(principal("alice", "s1"), [("user", "my automobile is blue")])
        store.record_events(principal("bob", "s1"), [("user", "bob's automobile is red")])
        embed_all(store, embedder, "alice")
        [(bob_event, _)] = store.events_to_embed("bob", embedder.model, 384, 10)
        # alice cannot give bob's event a vector
        store.save_event_vectors("alice", embedder.model, [(bob_event, embedder.embed_one("x"))])
        assert len(store.events_to_embed("bob", embedder.model, 384, 10)) == 1
        vector = embedder.embed_one("car")
        assert store.search_conversation("bob", "car", vector, top_k=5, model=embedder.model) == []
        other = HashingEmbedder(384)
        assert store.search_conversation("alice", "car", vector, top_k=5, model=other.model) == []

    def test_dropping_vectors_drops_event_vectors(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        store.record_events(principal("alice", "s1"), [("user", "my automobile is blue")])
        embed_all(store, embedder, "alice")
        store.drop_vectors()
        assert len(store.events_to_embed("alice", embedder.model, 384, 10)) == 1
