"""Typical model-written snippets give exactly what CPython 3.14 gives (see ``corpus``),
through ``Runtime.execute``: the model reads stdout, then stderr under a ``[stderr]`` line,
then the final expression's value; a raised exception is an ``execution_error`` whose
message is what was printed and then the traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._doors import python, run, text
from .corpus import SNIPPETS, Snippet

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("python_exec_compiled")]


def expected(snippet: Snippet) -> str:
    printed = []
    if snippet.stdout:
        printed.append(snippet.stdout.removesuffix("\n"))
    if snippet.stderr:
        printed.append("[stderr]\n" + snippet.stderr.removesuffix("\n"))
    if snippet.error is not None:
        return ("\n".join(printed) + "\n" + snippet.error).lstrip("\n")
    return "\n".join([*printed, *([snippet.value] if snippet.value else [])]) or "(no output)"


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[snippet.name for snippet in SNIPPETS])
async def test_snippet_runs_as_in_cpython(snippet: Snippet, tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    for name, content in snippet.files.items():
        (workspace / name).write_text(content)
    async with python(tmp_path) as runtime:
        result = await run(runtime, snippet.code)
    assert result.is_error == (snippet.error is not None), text(result)
    assert text(result) == expected(snippet)


def test_the_corpus_covers_what_models_write() -> None:
    names = {snippet.name for snippet in SNIPPETS}
    assert len(names) == len(SNIPPETS) >= 25
    assert any(snippet.files for snippet in SNIPPETS)
    assert any(snippet.value for snippet in SNIPPETS)
    assert any(snippet.error for snippet in SNIPPETS)
