"""The embedded store's untagged vector search: each user's ``vec0`` partition, ranked
under a distance bound taken from a sample, finds the same chunks as ranking every one of
the user's vectors; a store made before the partitions gets them by a migration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from toolcage.host_bindings._store import HashingEmbedder, _schema, open_store
from toolcage.host_bindings._store import _sqlite_vectors as vectors_index
from toolcage.host_bindings._store._fusion import owner_token, pack_vector
from toolcage.host_bindings._store._sqlite import EmbeddedStore

from .conftest import principal

EMBEDDER = HashingEmbedder(64)
QUERY = "lemon tea garden"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    opened = open_store("sqlite:state.db", base_dir=tmp_path)
    assert isinstance(opened, EmbeddedStore)
    try:
        yield opened
    finally:
        opened.close()


def save(store: EmbeddedStore, user: str, note_id: str, text: str) -> None:
    vector = EMBEDDER.embed_one(text)
    store.save_note(principal(user), note_id, [text], [vector], [], EMBEDDER.model)


def fill(store: EmbeddedStore, user: str, far: int, near: int) -> None:
    """``far`` notes sharing no word with the query, then ``near`` sharing some."""
    for n in range(far):
        save(store, user, f"{user}-far-{n}", f"stone {n} bridge river {n * 7} owl")
    for n in range(near):
        save(store, user, f"{user}-near-{n}", f"lemon {n} tea cup {n * 3} garden")


def nearest_distances(store: EmbeddedStore, user: str, pool: int) -> tuple[list[float], ...]:
    """The Hamming distances of the chunks the partition search picks, and of the user's
    ``pool`` nearest by brute force (distances, not ids: equal distances tie)."""
    blob = pack_vector(EMBEDDER.embed_one(QUERY))
    with store._reading() as conn:
        [(bits,)] = conn.execute("SELECT vec_quantize_binary(vec_f32(?))", (blob,))
        picked = vectors_index._nearest_of_owner(conn, user, bits, pool, 64)
        every = conn.execute(
            "SELECT chunk_id, vec_distance_hamming(vec_bit(bits), vec_bit(?))"
            " FROM chunk_bits WHERE user_id = ?",
            (bits, user),
        )
        by_id = {int(row[0]): float(row[1]) for row in every}
    return sorted(by_id[chunk] for chunk in picked), sorted(by_id.values())[:pool]


class TestBoundedKnn:
    def test_a_user_within_the_sample_gets_the_exact_pool(self, store: EmbeddedStore) -> None:
        fill(store, "ada", far=30, near=30)
        picked, exact = nearest_distances(store, "ada", pool=20)
        assert picked == exact

    def test_a_sample_of_far_vectors_only_costs_another_pass(
        self, store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # The sample is the user's first chunks: here all far from the query, so the
        # first bounds let too few through and the search widens them.
        monkeypatch.setattr(vectors_index, "SAMPLE", 40)
        fill(store, "ada", far=60, near=60)
        for pool in (10, 30, 100, 400):
            picked, exact = nearest_distances(store, "ada", pool)
            assert picked == exact

    def test_another_users_vectors_are_neither_sampled_nor_found(
        self, store: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(vectors_index, "SAMPLE", 40)
        fill(store, "bob", far=0, near=80)  # bob's chunks come first and are the nearest
        fill(store, "ada", far=50, near=10)
        picked, exact = nearest_distances(store, "ada", pool=20)
        assert picked == exact
        vector = EMBEDDER.embed_one(QUERY)
        hits = store.search_notes("ada", QUERY, vector, top_k=100, model=EMBEDDER.model)
        assert len(hits) == 60
        assert all(hit.note_id.startswith("ada-") for hit in hits)
        with store._reading() as conn:
            owner = owner_token("ada")
            partition = conn.execute("SELECT rowid FROM chunk_owner_vec WHERE owner = ?", (owner,))
            own = conn.execute("SELECT id FROM chunks WHERE user_id = 'ada'")
            assert sorted(partition) == sorted(own)

    def test_deleted_and_replaced_notes_leave_the_partition(self, store: EmbeddedStore) -> None:
        fill(store, "ada", far=5, near=5)
        assert store.delete_note("ada", "ada-near-0")
        replaced = [EMBEDDER.embed_one("owl")]
        store.replace_note(principal("ada"), "ada-near-1", ["owl"], replaced, [], EMBEDDER.model)
        with store._reading() as conn:
            [(count,)] = conn.execute("SELECT count(*) FROM chunk_owner_vec")
            [(chunks,)] = conn.execute("SELECT count(*) FROM chunks")
        assert count == chunks == 9
        picked, exact = nearest_distances(store, "ada", pool=9)
        assert picked == exact
        assert store.drop_vectors() == 9


class TestMigrationToOwnerPartitions:
    def test_a_store_of_version_7_gets_its_vectors_partitioned_by_user(
        self, tmp_path: Path
    ) -> None:
        store = open_store("sqlite:state.db", base_dir=tmp_path)
        try:
            assert isinstance(store, EmbeddedStore)
            for user in ("ada", "bob"):
                fill(store, user, far=3, near=3)
            with store._writing() as conn:  # as version 7 left it: no partitions by user
                conn.execute("DROP TABLE chunk_owner_vec")
                conn.execute("UPDATE store_meta SET value = '7' WHERE key = 'schema_version'")
        finally:
            store.close()
        store = open_store("sqlite:state.db", base_dir=tmp_path)
        try:
            assert isinstance(store, EmbeddedStore)
            with store._reading() as conn:
                [(version,)] = conn.execute(
                    "SELECT value FROM store_meta WHERE key = 'schema_version'"
                )
                owners = {
                    str(owner): int(count)
                    for owner, count in conn.execute(
                        "SELECT owner, count(*) FROM chunk_owner_vec"
                        " WHERE rowid IN (SELECT id FROM chunks) GROUP BY owner"
                    )
                }
            assert int(version) == _schema.SCHEMA_VERSION
            assert owners == {owner_token(user): 6 for user in ("ada", "bob")}
            picked, exact = nearest_distances(store, "bob", pool=4)
            assert picked == exact
            vector = EMBEDDER.embed_one("lemon 2 tea")
            [hit] = store.search_notes("bob", "", vector, top_k=1, model=EMBEDDER.model)
            assert hit.note_id == "bob-near-2"
            save(store, "bob", "new", "a new note")
        finally:
            store.close()

    def test_a_store_of_version_7_without_vectors_opens(self, tmp_path: Path) -> None:
        store = open_store("sqlite:state.db", base_dir=tmp_path)
        try:
            store.save_note(principal("ada"), "n", ["plain words"], None, [], None)
            assert isinstance(store, EmbeddedStore)
            with store._writing() as conn:
                conn.execute("UPDATE store_meta SET value = '7' WHERE key = 'schema_version'")
        finally:
            store.close()
        store = open_store("sqlite:state.db", base_dir=tmp_path)
        try:
            assert [hit.note_id for hit in store.search_notes("ada", "words", None, top_k=3)] == [
                "n"
            ]
            assert isinstance(store, EmbeddedStore)
            save(store, "ada", "v", "now with a vector")
            picked, exact = nearest_distances(store, "ada", pool=1)
            assert picked == exact
        finally:
            store.close()
