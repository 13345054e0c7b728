"""Typical model-written snippets give exactly what CPython 3.14 gives (see ``corpus``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._harness import Guest
from .corpus import SNIPPETS, Snippet


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[snippet.name for snippet in SNIPPETS])
def test_snippet_runs_as_in_cpython(guest: Guest, snippet: Snippet, tmp_path: Path) -> None:
    for name, text in snippet.files.items():
        (tmp_path / name).write_text(text)
    outcome = guest.run(snippet.code, tmp_path)
    assert outcome.error == snippet.error
    assert outcome.stdout == snippet.stdout
    assert outcome.stderr == snippet.stderr
    assert outcome.value == snippet.value


def test_the_corpus_covers_what_models_write() -> None:
    names = {snippet.name for snippet in SNIPPETS}
    assert len(names) == len(SNIPPETS) >= 25
    assert any(snippet.files for snippet in SNIPPETS)
    assert any(snippet.value for snippet in SNIPPETS)
    assert any(snippet.error for snippet in SNIPPETS)
