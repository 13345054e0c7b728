"""The search pieces both backends share: the keyword query, the common-terms cutoff,
the cached document frequencies and the rank fusion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from toolcage.host_bindings._store._fusion import (
    TermFrequencies,
    fts_query,
    fuse,
    owner_token,
    query_words,
    rarest_words,
    tag_token,
)


class TestKeywordQuery:
    def test_words_are_lowercased_deduplicated_and_quoted(self) -> None:
        words = query_words('Tea, "tea" OR lemon* (NEAR)')
        assert words == ["tea", "or", "lemon", "near"]
        assert fts_query("ada", words, ["x"]) == (
            f'owner:"{owner_token("ada")}" AND tagset:"{tag_token("x")}"'
            ' AND text:("tea" OR "or" OR "lemon" OR "near")'
        )

    def test_no_words_means_no_keyword_search(self) -> None:
        assert query_words("?! ---") == []
        assert fts_query("ada", [], []) is None

    def test_tokens_differ_per_user_and_tag_and_are_one_word(self) -> None:
        assert owner_token("a b") != owner_token("a-b")
        assert tag_token("x").isalnum()
        assert owner_token('"; DROP').isalnum()


class TestCommonTermsCutoff:
    def test_the_rarest_words_are_kept_within_the_budget(self) -> None:
        frequencies = {"the": 90_000, "tea": 300, "lemon": 40, "cup": 4_000}
        words = ["the", "tea", "lemon", "cup"]
        assert rarest_words(words, frequencies, budget=5_000) == ["tea", "lemon", "cup"]
        assert rarest_words(words, frequencies, budget=1_000) == ["tea", "lemon"]

    def test_the_rarest_word_is_kept_even_over_the_budget(self) -> None:
        assert rarest_words(["the", "a"], {"the": 90_000, "a": 80_000}, budget=10) == ["a"]

    def test_unknown_words_count_as_rare(self) -> None:
        assert rarest_words(["new", "the"], {"the": 90_000}, budget=10) == ["new"]


class TestTermFrequencies:
    def test_frequencies_are_cached_until_they_expire(self) -> None:
        now = [0.0]
        asked: list[list[str]] = []

        def fetch(words: Sequence[str]) -> Mapping[str, int]:
            asked.append(list(words))
            return {"tea": 3}

        frequencies = TermFrequencies(fetch, ttl=10.0, clock=lambda: now[0])
        assert frequencies.get(["tea", "cup"]) == {"tea": 3, "cup": 0}
        assert frequencies.get(["tea"]) == {"tea": 3}
        now[0] = 11.0
        frequencies.get(["tea"])
        assert asked == [["tea", "cup"], ["tea"]]


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
