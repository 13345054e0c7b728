"""What every state store does, whichever backend: run on the embedded and the remote one."""

from __future__ import annotations

import time
import uuid

import pytest
from toolcage.host_bindings._store import (
    EmbeddingModelMismatch,
    HashingEmbedder,
    NoteRecord,
    StateStore,
)

from .conftest import Opener, principal

MIN_SIMILARITY = 0.3
"""Texts of the test embedder that share no word have a cosine near 0 (about ±0.05 for
384 dimensions); sharing one word of five gives about 0.45."""


def new_id() -> str:
    return f"note-{uuid.uuid4()}"


def save(
    store: StateStore,
    embedder: HashingEmbedder | None,
    user: str,
    *chunks: str,
    tags: tuple[str, ...] = (),
    note_id: str | None = None,
) -> NoteRecord:
    vectors = embedder.embed(list(chunks), time.monotonic() + 5) if embedder else None
    model = embedder.model if embedder else None
    return store.save_note(
        principal(user), note_id or new_id(), list(chunks), vectors, list(tags), model
    )


def search(
    store: StateStore,
    embedder: HashingEmbedder | None,
    user: str,
    query: str,
    *,
    top_k: int = 5,
    tags: tuple[str, ...] = (),
    vector_weight: float = 1.0,
    fts_weight: float = 1.0,
    min_similarity: float | None = MIN_SIMILARITY,
) -> list[str]:
    """The texts found, best first."""
    vector = embedder.embed_one(query) if embedder else None
    hits = store.search_notes(
        user,
        query,
        vector,
        top_k=top_k,
        tags=list(tags),
        vector_weight=vector_weight,
        fts_weight=fts_weight,
        model=embedder.model if embedder else None,
        min_similarity=min_similarity,
    )
    return [hit.text for hit in hits]


class TestNoteRoundTrip:
    def test_a_saved_note_is_found_with_its_fields(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        record = save(store, embedder, "alice", "green tea with lemon", tags=("drinks", "tea"))
        assert record.chunk_count == 1
        assert record.tags == ("drinks", "tea")
        assert record.model == embedder.model
        assert record.created_at == record.updated_at
        assert record.created_at.endswith("Z")
        [hit] = store.search_notes(
            "alice", "lemon", embedder.embed_one("lemon"), top_k=5, model=embedder.model
        )
        assert (hit.note_id, hit.text, hit.chunk_index) == (
            record.note_id,
            "green tea with lemon",
            0,
        )
        assert hit.tags == ("drinks", "tea")
        assert (hit.created_at, hit.updated_at) == (record.created_at, record.updated_at)
        assert hit.vector_rank == 1
        assert hit.keyword_rank == 1
        assert hit.score > 0

    def test_the_best_chunk_of_a_long_note_is_the_hit(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        record = save(store, embedder, "alice", "first part about gardens", "second part on tides")
        assert record.chunk_count == 2
        [hit] = store.search_notes(
            "alice", "tides", embedder.embed_one("tides"), top_k=5, model=embedder.model
        )
        assert (hit.note_id, hit.text, hit.chunk_index) == (
            record.note_id,
            "second part on tides",
            1,
        )

    def test_replace_keeps_the_id_and_creation_time(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        old = save(store, embedder, "alice", "likes coffee", tags=("drinks",))
        new = store.replace_note(
            principal("alice"),
            old.note_id,
            ["prefers tea", "no sugar"],
            embedder.embed(["prefers tea", "no sugar"], time.monotonic() + 5),
            ["prefs"],
            embedder.model,
        )
        assert new is not None
        assert (new.note_id, new.created_at, new.tags, new.chunk_count) == (
            old.note_id,
            old.created_at,
            ("prefs",),
            2,
        )
        assert new.updated_at >= old.updated_at
        assert search(store, embedder, "alice", "coffee") == []
        assert search(store, embedder, "alice", "tea", tags=("drinks",)) == []
        assert search(store, embedder, "alice", "tea", tags=("prefs",))[0] == "prefers tea"

    def test_replace_and_delete_of_an_unknown_note_change_nothing(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        save(store, embedder, "alice", "kept note")
        assert store.replace_note(principal("alice"), new_id(), ["x"], None, [], None) is None
        assert store.delete_note("alice", new_id()) is False
        assert search(store, embedder, "alice", "kept note") == ["kept note"]

    def test_delete_removes_every_chunk(self, store: StateStore, embedder: HashingEmbedder) -> None:
        record = save(store, embedder, "alice", "alpha chunk", "beta chunk")
        save(store, embedder, "alice", "other chunk")
        assert store.delete_note("alice", record.note_id) is True
        assert search(store, embedder, "alice", "alpha beta chunk") == ["other chunk"]
        assert store.delete_note("alice", record.note_id) is False

    def test_notes_without_vectors_are_found_by_keyword(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        save(store, None, "alice", "plain keyword note")
        assert search(store, None, "alice", "keyword") == ["plain keyword note"]
        assert search(store, embedder, "alice", "keyword") == ["plain keyword note"]

    def test_query_words_are_never_fts_syntax(self, store: StateStore) -> None:
        save(store, None, "alice", "quotes and stars")
        for query in ('"quotes', "stars*", "NOT quotes", "owner:x OR quotes", "a) OR (b", "NEAR("):
            assert search(store, None, "alice", query) in ([], ["quotes and stars"])
        assert search(store, None, "alice", "!!! ???") == []


class TestTagFilters:
    def test_every_tag_must_match(self, store: StateStore, embedder: HashingEmbedder) -> None:
        save(store, embedder, "alice", "tea in the morning", tags=("drinks", "morning"))
        save(store, embedder, "alice", "tea at night", tags=("drinks",))
        save(store, embedder, "alice", "tea untagged")
        assert sorted(search(store, embedder, "alice", "tea", tags=("drinks",))) == [
            "tea at night",
            "tea in the morning",
        ]
        assert search(store, embedder, "alice", "tea", tags=("drinks", "morning")) == [
            "tea in the morning"
        ]
        assert search(store, embedder, "alice", "tea", tags=("drinks", "absent")) == []

    def test_tags_filter_the_vector_side_too(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        save(store, embedder, "alice", "my automobile is red", tags=("cars",))
        save(store, embedder, "alice", "my automobile is blue", tags=("other",))
        assert search(store, embedder, "alice", "car", tags=("cars",)) == ["my automobile is red"]


class TestHybridRanking:
    def test_meaning_only_and_keyword_only_notes_are_both_found(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        save(store, embedder, "alice", "the automobile needs new tyres")  # "car" by meaning
        save(store, embedder, "alice", "car park opens at nine in the morning today")
        for filler in ("weather was sunny", "bought bread", "meeting moved to friday"):
            save(store, embedder, "alice", filler)
        found = search(store, embedder, "alice", "car", top_k=2)
        assert sorted(found) == [
            "car park opens at nine in the morning today",
            "the automobile needs new tyres",
        ]

    def test_weights_change_the_order(self, store: StateStore, embedder: HashingEmbedder) -> None:
        save(store, embedder, "alice", "vehicle")  # the nearest vector to "car", no keyword
        save(
            store,
            embedder,
            "alice",
            "car keys lost near the old station platform after the late evening train",
        )
        vector_first = search(store, embedder, "alice", "car", vector_weight=1.0, fts_weight=0.2)
        keyword_first = search(store, embedder, "alice", "car", vector_weight=0.2, fts_weight=1.0)
        assert vector_first[0] == "vehicle"
        assert (
            keyword_first[0]
            == "car keys lost near the old station platform after the late evening train"
        )

    def test_without_a_query_vector_search_is_keyword_only(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        save(store, embedder, "alice", "the automobile needs new tyres")
        save(store, embedder, "alice", "car park opens at nine")
        assert search(store, None, "alice", "car") == ["car park opens at nine"]

    def test_top_k_bounds_the_hits(self, store: StateStore, embedder: HashingEmbedder) -> None:
        for n in range(8):
            save(store, embedder, "alice", f"note number {n} about tea")
        assert len(search(store, embedder, "alice", "tea", top_k=3)) == 3


class TestUserIsolation:
    def test_a_user_never_finds_another_users_notes(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        save(store, embedder, "alice", "alice secret garden code", tags=("private",))
        assert search(store, embedder, "bob", "alice secret garden code") == []
        assert search(store, embedder, "bob", "garden", tags=("private",)) == []

    def test_another_users_many_near_notes_do_not_crowd_out_ones_own(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        for n in range(60):
            save(store, embedder, "bob", f"garden roses {n}")
        save(store, embedder, "alice", "garden tulips and a long list of other words here")
        found = search(store, embedder, "alice", "garden roses", top_k=1, min_similarity=None)
        assert found == ["garden tulips and a long list of other words here"]

    def test_another_users_note_id_behaves_like_an_unknown_one(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        record = save(store, embedder, "alice", "alice keeps this")
        assert (
            store.replace_note(principal("bob"), record.note_id, ["bob's text"], None, [], None)
            is None
        )
        assert store.delete_note("bob", record.note_id) is False
        assert search(store, embedder, "alice", "keeps") == ["alice keeps this"]
        assert search(store, embedder, "bob", "text") == []

    def test_one_note_id_under_two_users_is_two_notes(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        note_id = new_id()
        save(store, embedder, "alice", "alice version", note_id=note_id)
        save(store, embedder, "bob", "bob version", note_id=note_id)
        assert store.delete_note("bob", note_id) is True
        assert search(store, embedder, "alice", "version") == ["alice version"]
        assert search(store, embedder, "bob", "version") == []


class TestScratchpad:
    def test_round_trip_and_replace(self, store: StateStore) -> None:
        assert store.read_pad("alice", "s1") is None
        first = store.write_pad(principal("alice", "s1"), ["find flights", "book hotel"])
        assert first.items == ("find flights", "book hotel")
        assert store.read_pad("alice", "s1") == first
        second = store.write_pad(principal("alice", "s1"), ["book hotel"])
        assert second.items == ("book hotel",)
        assert second.updated_at >= first.updated_at
        assert store.clear_pad("alice", "s1") is True
        assert store.read_pad("alice", "s1") is None
        assert store.clear_pad("alice", "s1") is False

    def test_nothing_leaks_across_sessions_or_users(self, store: StateStore) -> None:
        store.write_pad(principal("alice", "s1"), ["alice s1"])
        store.write_pad(principal("alice", "s2"), ["alice s2"])
        store.write_pad(principal("bob", "s1"), ["bob s1"])
        assert store.read_pad("alice", "s1").items == ("alice s1",)  # type: ignore[union-attr]
        assert store.read_pad("alice", "s2").items == ("alice s2",)  # type: ignore[union-attr]
        assert store.read_pad("bob", "s1").items == ("bob s1",)  # type: ignore[union-attr]
        assert store.read_pad("bob", "s2") is None
        assert store.clear_pad("bob", "s2") is False
        assert store.clear_pad("bob", "s1") is True
        assert store.read_pad("alice", "s1").items == ("alice s1",)  # type: ignore[union-attr]


class TestLifecycle:
    def test_an_empty_database_is_migrated(self, store: StateStore) -> None:
        assert store.stored_model() is None
        assert store.read_pad("alice", "s") is None

    def test_notes_and_pads_survive_reopening(
        self, opener: Opener, embedder: HashingEmbedder
    ) -> None:
        first = opener()
        record = save(first, embedder, "alice", "remember the milk", tags=("shopping",))
        first.write_pad(principal("alice", "s1"), ["step one"])
        first.close()
        second = opener()
        [hit] = second.search_notes(
            "alice",
            "milk",
            embedder.embed_one("milk"),
            top_k=3,
            tags=["shopping"],
            model=embedder.model,
        )
        assert hit.note_id == record.note_id
        assert second.read_pad("alice", "s1").items == ("step one",)  # type: ignore[union-attr]
        assert second.stored_model() == (embedder.model, 384)

    def test_a_closed_store_refuses_work(self, opener: Opener) -> None:
        store = opener()
        store.close()
        store.close()
        with pytest.raises(Exception, match="closed"):
            store.read_pad("alice", "s")


class TestEmbeddingModels:
    def test_vectors_of_another_model_are_refused(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        save(store, embedder, "alice", "tea with lemon")
        other = HashingEmbedder(384)
        with pytest.raises(EmbeddingModelMismatch, match=embedder.model):
            save(store, other, "alice", "coffee")
        with pytest.raises(EmbeddingModelMismatch, match=other.model):
            search(store, other, "alice", "tea")
        with pytest.raises(EmbeddingModelMismatch):
            search(store, HashingEmbedder(16, synonyms={"a": "b"}), "alice", "tea")

    def test_dropping_vectors_lets_another_model_in(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        save(store, embedder, "alice", "tea with lemon")
        assert store.drop_vectors() == 1
        assert store.stored_model() is None
        assert search(store, None, "alice", "lemon") == ["tea with lemon"]
        other = HashingEmbedder(64)
        save(store, other, "alice", "coffee black")
        assert store.stored_model() == (other.model, 64)
        assert search(store, other, "alice", "coffee") == ["coffee black"]


class TestSimilarityFloor:
    def test_without_a_floor_every_near_vector_is_a_hit(
        self, store: StateStore, embedder: HashingEmbedder
    ) -> None:
        save(store, embedder, "alice", "tea with lemon")
        save(store, embedder, "alice", "unrelated words entirely")
        assert len(search(store, embedder, "alice", "lemon", min_similarity=None)) == 2
        assert search(store, embedder, "alice", "lemon") == ["tea with lemon"]
