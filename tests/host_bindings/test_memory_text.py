"""Every note is found by its own text and by a word of it, whatever its script or spelling:
symbols and emoji only, Chinese, Japanese, Korean, Thai, Arabic, Hindi, decomposed (NFD)
and composed (NFC) accents, German and Turkish case, a word longer than a chunk. Through
``Runtime.from_config`` + ``execute`` of the memory tools, on the embedded and the remote
store, keyword-only and hybrid (the hash embedder); a store whose keyword index was made
by the previous version finds its notes after the upgrade; an empty tag filter is refused.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import apsw
import libsql_client
import pytest
from toolcage.host_bindings._store import _schema
from toolcage.runtime import Runtime, ToolExecutionContext, ToolResult

from .store.conftest import keyword_index_problems
from .store.libsql_server import LibsqlServer

pytestmark = pytest.mark.anyio

TOKEN = "memory-text-token"  # noqa: S105 -- the test server's own token
LONG_WORD = "".join("acgt"[(n * 7 + n // 5) % 4] for n in range(300))
"""A 300-character word (a DNA read): longer than a chunk of the configs below."""


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


NOTES: dict[str, tuple[str, tuple[str, ...]]] = {
    # name: (content, queries of a word of it, or of a part of a script without spaces)
    "symbols": ("→ ★ ✓", ("★",)),
    "emoji": ("🎉🍣", ("🍣",)),
    "punctuation": ("?!", ()),
    "chinese": ("我喜欢在东京看樱花", ("樱花", "东京")),
    "japanese": ("明日は大阪で会議があります", ("会議", "大阪")),
    "korean": ("서울에서 친구를 만났다", ("서울", "친구")),
    "thai": ("ฉันชอบกินข้าวผัดกุ้ง", ("ข้าวผัด", "กุ้ง")),
    "arabic": ("مَرْحَبًا بالعالم الجميل", ("مرحبا", "الجميل")),
    "hindi": ("मुझे हिन्दी भाषा पसंद है", ("हिन्दी", "भाषा")),
    "decomposed": (nfd("Mon résumé est prêt"), ("résumé", "PRÊT")),
    "composed": ("café crème brûlée", (nfd("brûlée"), nfd("Crème"))),
    "german": ("Die STRASSE ist lang", ("straße", "Straße")),
    "turkish": ("İstanbul boğazı", ("istanbul", "İSTANBUL", nfd("boğazı"))),
    "long word": (f"sequence {LONG_WORD} read", (LONG_WORD, LONG_WORD.upper())),
    "mixed": ("Standup 毎朝 ✓ 🎉 notes", ("毎朝", "standup")),
}

KEYWORD = "[state]\nurl = {url}\nchunk_chars = 100\n"
HYBRID = KEYWORD + '[state.embedder]\nkind = "hash"\ndimensions = 64\n'


class Box:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def call(self, tool: str, **args: Any) -> ToolResult:
        return await self.runtime.execute(tool, args, ToolExecutionContext(user_id="ada"))

    async def ok(self, tool: str, **args: Any) -> Any:
        result = await self.call(tool, **args)
        assert not result.is_error, result.output_text
        return json.loads(result.output_text.split("\n", 1)[0])

    async def found(self, query: str) -> list[str]:
        """The note ids a search finds, best first."""
        return [hit["note_id"] for hit in await self.ok("memory_search", query=query, top_k=20)]


@contextmanager
def store_url(tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The ``url`` (and token) lines of a config for ``backend``'s store under ``tmp_path``."""
    if backend == "embedded":
        yield '"data/state.db"'
        return
    monkeypatch.setenv("TC_TEST_LIBSQL_TOKEN", TOKEN)
    with LibsqlServer(tmp_path / "remote.db", token=TOKEN) as server:
        yield f'"{server.url}"\nauth_token_env = "TC_TEST_LIBSQL_TOKEN"'


@asynccontextmanager
async def box_at(root: Path, config: str) -> AsyncIterator[Box]:
    (root / "toolcage.toml").write_text(config)
    async with Runtime.from_config(root / "toolcage.toml") as runtime:
        yield Box(runtime)


@pytest.fixture(params=["embedded", "remote"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("config", [KEYWORD, HYBRID], ids=["keyword", "hybrid"])
async def test_every_note_is_found_by_its_text_and_its_words(
    tmp_path: Path, backend: str, config: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with store_url(tmp_path, backend, monkeypatch) as url:
        async with box_at(tmp_path, config.format(url=url)) as box:
            ids = {}
            for name, (content, _) in NOTES.items():
                ids[name] = (await box.ok("memory_save", content=content))["note_id"]
            for name, (content, queries) in NOTES.items():
                assert (await box.found(content))[0] == ids[name], name
                for query in queries:
                    assert ids[name] in await box.found(query), (name, query)
            # A cut never splits the long word: it is a chunk of its own, stored whole.
            [hit] = await box.ok("memory_search", query=LONG_WORD, top_k=1)
            assert hit["text"] == LONG_WORD


class TestTagFilter:
    @pytest.mark.parametrize("tags", [[""], ["home", " "]])
    async def test_an_empty_tag_is_a_validation_error_naming_the_field(
        self, tmp_path: Path, tags: list[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        with store_url(tmp_path, "embedded", monkeypatch) as url:
            async with box_at(tmp_path, KEYWORD.format(url=url)) as box:
                await box.ok("memory_save", content="the key is under the mat", tags=["home"])
                result = await box.call("memory_search", query="key", tags=tags)
                assert result.is_error
                assert result.error is not None
                assert result.error.kind.value == "validation_error"
                assert re.search(rf"tags\[{len(tags) - 1}\]", result.error.message)
                assert [hit["text"] for hit in await box.ok("memory_search", query="key")] == [
                    "the key is under the mat"
                ]


# -- a store of the previous schema, its keyword index made by the previous tokeniser -----

OLD_VERSION = 6
OLD_NOTES = ("→ ★ ✓", "我喜欢在东京看樱花", nfd("Mon résumé est prêt"), "tea with lemon")


def old_words(text: str) -> list[str]:
    """Version 6's words: case-folded, every nonspacing mark dropped, runs of letters and
    digits cut at 64 characters; a text of none was not indexed."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(c for c in folded if unicodedata.category(c) != "Mn")
    return [word[:64] for word in re.findall(r"[^\W_]+", folded)]


Run = Callable[..., Sequence[Sequence[Any]]]


def write_version_6(run: Run) -> None:
    """Version 6's tables, holding ada's notes, keyword-indexed as version 6 did."""
    run(_schema.META_TABLE)
    for steps in _schema.MIGRATIONS[:OLD_VERSION]:
        for step in steps:
            for sql, args in [(step, ())] if isinstance(step, str) else step(run):
                run(sql, args)
    run("INSERT INTO store_meta VALUES ('schema_version', ?)", (str(OLD_VERSION),))
    run("INSERT INTO keyword_corpora (id, user_id, kind) VALUES (1, 'ada', 'notes')")
    for n, text in enumerate(OLD_NOTES):
        note_id = f"note-00000000-0000-4000-8000-{n:012d}"
        run(
            "INSERT INTO notes (id, user_id, note_id, tags, created_at, updated_at)"
            " VALUES (?, 'ada', ?, '[]', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
            (n + 1, note_id),
        )
        run(
            "INSERT INTO chunks (id, note_rowid, user_id, chunk_index, text)"
            " VALUES (?, ?, 'ada', 0, ?)",
            (n + 1, n + 1, text),
        )
        words = old_words(text)
        if not words:
            continue
        length = len(words) + 1
        for word, hits in Counter(words).items():
            run("INSERT INTO keyword_postings VALUES (1, ?, ?, ?, ?)", (word, n + 1, hits, length))
            run(
                "INSERT INTO keyword_terms VALUES (1, ?, 1)"
                " ON CONFLICT (corpus, term) DO UPDATE SET documents = documents + 1",
                (word,),
            )
        run(
            "UPDATE keyword_corpora SET documents = documents + 1, length = length + ?",
            (length,),
        )


@contextmanager
def direct(tmp_path: Path, url: str) -> Iterator[Run]:
    """A function running SQL on the store at the config's ``url`` line, bypassing toolcage."""
    if url.startswith('"data/'):
        (tmp_path / "data").mkdir()
        conn = apsw.Connection(str(tmp_path / "data/state.db"))
        try:
            yield lambda sql, args=(): list(conn.execute(sql, args))
        finally:
            conn.close()
        return
    client = libsql_client.create_client_sync(url.split('"')[1], auth_token=TOKEN)
    try:
        yield lambda sql, args=(): list(client.execute(sql, list(args)).rows)
    finally:
        client.close()


async def test_a_store_indexed_by_the_previous_version_finds_its_notes(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with store_url(tmp_path, backend, monkeypatch) as url, direct(tmp_path, url) as run:
        write_version_6(run)
        assert not run("SELECT 1 FROM keyword_postings WHERE term = '★'")  # not indexed
        async with box_at(tmp_path, KEYWORD.format(url=url)) as box:
            for n, text in enumerate(OLD_NOTES):
                assert (await box.found(text))[0].endswith(f"{n:012d}"), text
            assert (await box.found("樱花"))[0].endswith("1")
            assert (await box.found("résumé"))[0].endswith("2")
        version = run("SELECT value FROM store_meta WHERE key = 'schema_version'")
        assert [row[0] for row in version] == [str(_schema.SCHEMA_VERSION)]
        assert keyword_index_problems(lambda sql: run(sql)) == []
