"""The keyword index's pieces: what a word is, which query words are searched, and how a
word is weighed (on the store, ``test_keyword_recall`` and the contract tests)."""

from __future__ import annotations

import math

from toolcage.host_bindings._store._keywords import (
    MAX_QUERY_WORDS,
    MAX_WORD_CHARS,
    idf,
    query_words,
    rarest_words,
    words,
)


class TestWords:
    def test_words_are_runs_of_letters_and_digits_case_folded(self) -> None:
        assert words("Tea, TEA & tea_cup: 2 cups!") == ["tea", "tea", "tea", "cup", "2", "cups"]

    def test_diacritics_are_removed(self) -> None:
        assert words("Café naïve Ångström STRASSE Straße") == [
            "cafe",
            "naive",
            "angstrom",
            "strasse",
            "strasse",
        ]

    def test_other_scripts_are_words_too(self) -> None:
        assert words("東京 Москва") == ["東京", "москва"]

    def test_a_long_word_is_cut(self) -> None:
        assert words("x" * 500) == ["x" * MAX_WORD_CHARS]

    def test_query_words_are_distinct_and_bounded(self) -> None:
        assert query_words('Tea, "tea" OR lemon* (NEAR)') == ["tea", "or", "lemon", "near"]
        assert query_words("?! ---") == []
        many = " ".join(f"w{n}" for n in range(100))
        assert query_words(many) == [f"w{n}" for n in range(MAX_QUERY_WORDS)]


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
