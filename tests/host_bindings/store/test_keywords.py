"""The keyword index's pieces: what a term is, which query terms are searched, and how a
term is weighed (on the store, ``test_keyword_recall`` and the contract tests; through the
memory tools, ``tests/host_bindings/test_memory_text.py``)."""

from __future__ import annotations

import math
import unicodedata

from toolcage.host_bindings._note_text import chunks_of
from toolcage.host_bindings._store._keywords import (
    MAX_QUERY_TERMS,
    idf,
    query_terms,
    rarest_words,
)
from toolcage.host_bindings._store._terms import MAX_TERM_CHARS, fold, terms


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


class TestTerms:
    def test_words_are_runs_of_letters_and_digits_case_folded(self) -> None:
        assert terms("Tea, TEA & tea_cup: 2 cups!") == ["tea", "tea", "tea", "cup", "2", "cups"]

    def test_diacritics_are_removed(self) -> None:
        assert terms("Café naïve Ångström STRASSE Straße") == [
            "cafe",
            "naive",
            "angstrom",
            "strasse",
            "strasse",
        ]

    def test_composed_and_decomposed_spellings_are_one_term(self) -> None:
        for text in ("résumé", "Ελλάδα", "ガス", "한국어", "ที่ไหน", "हिन्दी"):
            assert terms(nfd(text)) == terms(text), text
            assert fold(nfd(text)) == fold(text), text
        assert terms("ＦＵＬＬ ﬁle") == ["full", "file"]  # compatibility forms
        assert terms("İSTANBUL") == terms("istanbul") == ["istanbul"]
        assert terms("co\u00adop\u200bera\u200ction") == ["cooperation"]  # invisible format

    def test_marks_of_other_scripts_stay_in_their_word(self) -> None:
        assert terms("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
        assert terms(nfd("ガス")) == ["ガ", "ス", "ガス"]  # voicing kept: not カス
        assert terms("مَرْحَبًا") == terms("مرحبا")  # harakat dropped

    def test_scripts_without_spaces_are_characters_and_pairs(self) -> None:
        assert terms("東京の天気") == [*"東京の天気", "東京", "京の", "の天", "天気"]
        assert terms("Москва 東京") == ["москва", "東", "京", "東京"]
        assert terms("ที่นี่") == ["ที่", "นี่", "ที่นี่"]

    def test_symbols_outside_ascii_are_terms_of_their_own(self) -> None:
        assert terms("→ ★ ✓") == ["→", "★", "✓"]
        assert terms("tea🍵 ❤️") == ["tea", "🍵", "❤"]  # the variation selector is dropped
        assert terms("a+b=c $5 `x`") == ["a", "b", "c", "5", "x"]

    def test_a_text_without_terms_is_its_own_term(self) -> None:
        assert terms("  ?!  --- ") == ["?! ---"]
        assert terms(" \n ") == []

    def test_a_long_word_is_one_bounded_term_of_all_of_it(self) -> None:
        [long] = terms("x" * 500)
        assert len(long) == MAX_TERM_CHARS
        assert long.startswith("x" * 31 + "#")
        assert terms("x" * 499 + "y") != [long]
        assert terms("X" * 500) == [long]

    def test_query_terms_are_distinct_and_bounded(self) -> None:
        assert query_terms('Tea, "tea" OR lemon* (NEAR)') == ["tea", "or", "lemon", "near"]
        assert query_terms("?! ---") == ["?! ---"]
        many = " ".join(f"w{n}" for n in range(100))
        assert query_terms(many) == [f"w{n}" for n in range(MAX_QUERY_TERMS)]


class TestChunks:
    def test_a_cut_moves_before_a_word_it_would_split(self) -> None:
        text = "short words " + "z" * 95
        assert chunks_of(text, 100) == ["short words", "z" * 95]

    def test_a_word_longer_than_a_chunk_is_a_chunk_of_its_own(self) -> None:
        text = "intro " + "x" * 300 + " tail"
        assert chunks_of(text, 100) == ["intro", "x" * 300, "tail"]

    def test_a_mark_stays_with_its_character(self) -> None:
        text = "東" * 99 + nfd("é") + "東"  # the cut at 100 falls between e and its accent
        assert chunks_of(text, 100) == ["東" * 99, nfd("é") + "東"]

    def test_text_without_spaces_is_cut_at_its_full_stops(self) -> None:
        text = "東京の天気は晴れです。" * 20
        assert all(chunk.endswith("。") for chunk in chunks_of(text, 100))


class TestCommonTermsCutoff:
    def test_the_rarest_words_are_kept_within_the_budget(self) -> None:
        frequencies = {"the": 90_000, "tea": 300, "lemon": 40, "cup": 4_000}
        query = ["the", "tea", "lemon", "cup"]
        assert rarest_words(query, frequencies, budget=5_000) == ["tea", "lemon", "cup"]
        assert rarest_words(query, frequencies, budget=1_000) == ["tea", "lemon"]

    def test_the_rarest_word_is_kept_even_over_the_budget(self) -> None:
        assert rarest_words(["the", "a"], {"the": 90_000, "a": 80_000}, budget=10) == ["a"]


class TestInverseDocumentFrequency:
    def test_rare_words_weigh_more(self) -> None:
        assert idf(1_000, 1) > idf(1_000, 10) > idf(1_000, 100)
        assert idf(1_000, 10) == math.log(990.5 / 10.5)

    def test_a_word_in_most_documents_still_weighs_a_little(self) -> None:
        assert idf(10, 9) == 1e-6
