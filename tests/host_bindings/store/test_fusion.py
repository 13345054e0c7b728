"""The rank fusion both backends share, and the keys of the embedded store's vector
partitions."""

from __future__ import annotations

from toolcage.host_bindings._store._fusion import fuse, owner_token, tag_token


class TestPartitionKeys:
    def test_keys_differ_per_user_and_tag_and_are_one_word(self) -> None:
        assert owner_token("a b") != owner_token("a-b")
        assert tag_token("x").isalnum()
        assert owner_token('"; DROP').isalnum()


class TestFusion:
    def test_a_note_in_both_lists_beats_one_in_either(self) -> None:
        fused = fuse([(1, 10), (2, 20)], [(3, 30), (4, 20)], vector_weight=1, fts_weight=1, top_k=3)
        assert [entry.note_rowid for entry in fused] == [20, 10, 30]
        assert (fused[0].vector_rank, fused[0].keyword_rank, fused[0].best_chunk) == (2, 2, 2)

    def test_weights_decide_between_the_lists(self) -> None:
        vector, keyword = [(1, 10)], [(2, 20)]
        by_vector = fuse(vector, keyword, vector_weight=1, fts_weight=0.5, top_k=2)
        by_keyword = fuse(vector, keyword, vector_weight=0.5, fts_weight=1, top_k=2)
        assert [e.note_rowid for e in by_vector] == [10, 20]
        assert [e.note_rowid for e in by_keyword] == [20, 10]

    def test_a_notes_rank_is_that_of_its_best_chunk(self) -> None:
        fused = fuse([(1, 10), (2, 10), (3, 30)], [], vector_weight=1, fts_weight=1, top_k=5)
        assert [(e.note_rowid, e.vector_rank, e.best_chunk) for e in fused] == [
            (10, 1, 1),
            (30, 2, 3),
        ]
