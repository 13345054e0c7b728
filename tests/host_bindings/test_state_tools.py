"""The memory, scratchpad and vault tools: WASI guests through ``Runtime.execute``, on the
embedded state store of a config, scoped to the calling user, session and agent."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolcage.runtime import Runtime, ToolExecutionContext, ToolResult

from .store.libsql_server import LibsqlServer

pytestmark = pytest.mark.anyio

NOTE_ID = re.compile(r"^note-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
HIT_KEYS = {"text", "source", "score", "note_id", "tags", "created_at", "updated_at"}

CONFIG = """
[state]
url = "data/state.db"

[state.embedder]
kind = "hash"
dimensions = 64

[state.vault]
dir = "vault"
max_bytes = 64
grants = { default = ["*"], helper = ["api-*"] }
"""


@dataclass
class Box:
    runtime: Runtime
    root: Path

    async def call(
        self, tool: str, user: str = "ada", session: str = "s1", agent: str = "default", **args: Any
    ) -> ToolResult:
        ctx = ToolExecutionContext(user_id=user, session_id=session, agent_id=agent)
        return await self.runtime.execute(tool, args, ctx)

    async def ok(self, tool: str, **args: Any) -> Any:
        """The JSON output of a successful call."""
        result = await self.call(tool, **args)
        assert not result.is_error, result.output_text
        return json.loads(result.output_text.split("\n", 1)[0])

    async def text(self, tool: str, **args: Any) -> str:
        result = await self.call(tool, **args)
        assert not result.is_error, result.output_text
        return result.output_text

    async def fails(self, tool: str, error_type: str, **args: Any) -> str:
        result = await self.call(tool, **args)
        assert result.is_error, result.output_text
        assert result.error is not None
        assert result.error.kind.value == error_type, result.error.message
        return result.error.message


@asynccontextmanager
async def box_at(root: Path, text: str) -> AsyncIterator[Box]:
    """A runtime of the config ``text`` in ``root``, with an empty ``vault`` directory."""
    (root / "vault").mkdir(exist_ok=True)
    (root / "toolcage.toml").write_text(text)
    async with Runtime.from_config(root / "toolcage.toml") as runtime:
        yield Box(runtime, root)


@pytest.fixture
async def box(tmp_path: Path) -> AsyncIterator[Box]:
    async with box_at(tmp_path, CONFIG) as made:
        yield made


@pytest.fixture
async def keyword_box(tmp_path: Path) -> AsyncIterator[Box]:
    async with box_at(tmp_path, '[state]\nurl = "data/state.db"\n') as made:
        yield made


class TestMemorySave:
    async def test_returns_a_note_id_and_a_message(self, box: Box) -> None:
        saved = await box.ok("memory_save", content="Ada drinks green tea.", tags=["Drinks"])
        assert NOTE_ID.match(saved["note_id"])
        assert saved["note_id"] in saved["message"]
        assert (box.root / "data/state.db").is_file()

    async def test_tags_are_trimmed_lowercased_and_deduplicated(self, box: Box) -> None:
        await box.ok("memory_save", content="tea notes", tags=[" Tea ", "TEA", "green", " "])
        [hit] = await box.ok("memory_search", query="tea")
        assert hit["tags"] == ["tea", "green"]

    async def test_empty_content_is_refused(self, box: Box) -> None:
        message = await box.fails("memory_save", "validation_error", content="  \n ")
        assert "content is empty" in message

    async def test_more_than_sixteen_tags_are_refused(self, box: Box) -> None:
        tags = [f"t{i}" for i in range(17)]
        message = await box.fails("memory_save", "validation_error", content="x", tags=tags)
        assert "at most 16" in message
        # Duplicates count once: seventeen spellings of sixteen tags are fine.
        await box.ok("memory_save", content="x", tags=[*tags[:16], "T0"])

    async def test_a_long_note_is_chunked_and_found_by_its_last_chunk(
        self, keyword_box: Box
    ) -> None:
        words = " ".join(f"filler{i}" for i in range(400)) + " zebra crossing"
        saved = await keyword_box.ok("memory_save", content=words)
        assert "chunks" in saved["message"]
        [hit] = await keyword_box.ok("memory_search", query="zebra")
        assert hit["note_id"] == saved["note_id"]
        assert "zebra" in hit["text"]


class TestMemorySearch:
    async def test_hits_have_exactly_the_documented_fields(self, box: Box) -> None:
        saved = await box.ok("memory_save", content="The user lives in Lisbon.", tags=["home"])
        [hit] = await box.ok("memory_search", query="Lisbon")
        assert set(hit) == HIT_KEYS
        assert hit["note_id"] == saved["note_id"]
        assert hit["text"] == "The user lives in Lisbon."
        assert hit["source"] == "note"
        assert isinstance(hit["score"], float)
        assert hit["score"] > 0
        assert hit["tags"] == ["home"]
        assert hit["created_at"] == hit["updated_at"]

    async def test_tags_must_all_match(self, box: Box) -> None:
        await box.ok("memory_save", content="tea at home", tags=["home", "drinks"])
        await box.ok("memory_save", content="tea at work", tags=["work", "drinks"])
        hits = await box.ok("memory_search", query="tea", tags=["DRINKS", "work"])
        assert [h["text"] for h in hits] == ["tea at work"]
        assert len(await box.ok("memory_search", query="tea", tags=["drinks"])) == 2

    async def test_top_k_bounds_the_hits(self, box: Box) -> None:
        for i in range(4):
            await box.ok("memory_save", content=f"coffee note {i}")
        assert len(await box.ok("memory_search", query="coffee", top_k=2)) == 2
        await box.fails("memory_search", "validation_error", query="coffee", top_k=21)

    async def test_the_configured_weights_fuse_the_two_rankings(self, tmp_path: Path) -> None:
        scores: list[float] = []
        for weights in ("vector_weight = 1.0\nfts_weight = 1.0", "vector_weight = 3.0"):
            text = CONFIG.replace('url = "data/state.db"', f'url = "{len(scores)}.db"\n{weights}')
            async with box_at(tmp_path, text) as made:
                await made.ok("memory_save", content="a grey heron by the lake")
                [hit] = await made.ok("memory_search", query="heron")
                scores.append(hit["score"])
        # First by meaning and by keyword alike: (3 + 1) / (1 + 1) times the score.
        assert scores[1] == pytest.approx(2 * scores[0], rel=1e-4)

    async def test_hybrid_search_says_nothing_about_keywords(self, box: Box) -> None:
        await box.ok("memory_save", content="tea")
        assert "keyword-only" not in await box.text("memory_search", query="tea")

    async def test_without_an_embedder_the_search_says_it_is_keyword_only(
        self, keyword_box: Box
    ) -> None:
        await keyword_box.ok("memory_save", content="The user likes chess.")
        text = await keyword_box.text("memory_search", query="chess")
        found, note = text.split("\n")
        assert [h["text"] for h in json.loads(found)] == ["The user likes chess."]
        assert note.startswith("keyword-only search")


class TestMemoryUpdateAndDelete:
    async def test_update_replaces_the_note_under_the_same_id(self, box: Box) -> None:
        saved = await box.ok("memory_save", content="likes oolong", tags=["tea"])
        [before] = await box.ok("memory_search", query="oolong")
        updated = await box.ok(
            "memory_update", note_id=saved["note_id"], content="likes rooibos", tags=["Herbal"]
        )
        assert updated["note_id"] == saved["note_id"]
        [after] = await box.ok("memory_search", query="rooibos")
        assert after["note_id"] == saved["note_id"]
        assert after["tags"] == ["herbal"]
        assert after["created_at"] == before["created_at"]
        assert after["updated_at"] >= before["updated_at"]
        assert await box.ok("memory_search", query="oolong", tags=["tea"]) == []

    async def test_delete_removes_the_note(self, box: Box) -> None:
        saved = await box.ok("memory_save", content="parks the car on level 3")
        deleted = await box.ok("memory_delete", note_id=saved["note_id"])
        assert deleted["deleted"] is True
        assert await box.ok("memory_search", query="car level") == []
        message = await box.fails("memory_delete", "validation_error", note_id=saved["note_id"])
        assert "no note" in message

    @pytest.mark.parametrize("note_id", ["note-00000000-0000-0000-0000-000000000000", "x", "../1"])
    async def test_an_unknown_id_is_a_validation_error(self, box: Box, note_id: str) -> None:
        for tool, args in (("memory_update", {"content": "x"}), ("memory_delete", {})):
            message = await box.fails(tool, "validation_error", note_id=note_id, **args)
            assert f"no note {note_id!r}" in message


class TestUserIsolation:
    """A guest of one user reaches none of another user's notes, even by their ids."""

    async def test_another_users_note_is_an_unknown_note(self, box: Box) -> None:
        saved = await box.ok("memory_save", user="ada", content="ada's secret: blue door")
        note_id = saved["note_id"]
        assert await box.ok("memory_search", user="bob", query="secret blue door") == []
        update = await box.fails(
            "memory_update", "validation_error", user="bob", note_id=note_id, content="mine"
        )
        delete = await box.fails("memory_delete", "validation_error", user="bob", note_id=note_id)
        unknown = "note-00000000-0000-0000-0000-000000000000"
        other = await box.fails("memory_delete", "validation_error", user="bob", note_id=unknown)
        assert update == delete == other.replace(unknown, note_id)
        [hit] = await box.ok("memory_search", user="ada", query="secret blue door")
        assert hit["text"] == "ada's secret: blue door"

    async def test_arguments_cannot_name_a_user(self, box: Box) -> None:
        result = await box.call("memory_search", user="bob", query="x", user_id="ada")
        assert result.error is not None
        assert result.error.kind.value == "validation_error"


class TestScratchpad:
    async def test_write_read_clear(self, box: Box) -> None:
        empty = await box.ok("scratchpad_read")
        assert empty == {"session_id": "s1", "items": [], "updated_at": None, "item_count": 0}
        written = await box.ok("scratchpad_write", items=["find the bug", "fix it"])
        assert written["updated"] is True
        assert written["item_count"] == 2
        pad = await box.ok("scratchpad_read")
        assert pad["items"] == ["find the bug", "fix it"]
        assert pad["item_count"] == 2
        assert pad["updated_at"]
        await box.ok("scratchpad_write", items=["only this"])
        assert (await box.ok("scratchpad_read"))["items"] == ["only this"]
        assert (await box.ok("scratchpad_clear"))["cleared"] is True
        assert (await box.ok("scratchpad_read"))["items"] == []
        assert (await box.ok("scratchpad_clear"))["cleared"] is False

    async def test_sessions_and_users_each_have_their_own_pad(self, box: Box) -> None:
        await box.ok("scratchpad_write", user="ada", session="s1", items=["ada s1"])
        await box.ok("scratchpad_write", user="ada", session="s2", items=["ada s2"])
        assert (await box.ok("scratchpad_read", user="bob", session="s1"))["items"] == []
        assert (await box.ok("scratchpad_read", user="ada", session="s1"))["items"] == ["ada s1"]
        await box.ok("scratchpad_clear", user="bob", session="s1")
        await box.ok("scratchpad_clear", user="ada", session="s2")
        assert (await box.ok("scratchpad_read", user="ada", session="s1"))["items"] == ["ada s1"]

    @pytest.mark.parametrize(
        "items",
        [[], ["x"] * 33, ["x" * 241], ["  "]],
        ids=["none", "too-many", "too-long", "blank"],
    )
    async def test_bad_items_are_refused(self, box: Box, items: list[str]) -> None:
        await box.fails("scratchpad_write", "validation_error", items=items)


class TestVault:
    async def test_copy_lands_whole_under_shared(self, box: Box) -> None:
        (box.root / "vault/api-key").write_bytes(b"sk-secret-123\n")
        text = await box.text("vault_copyto", item="api-key", path="/shared/key.txt")
        assert "sk-secret" not in text
        assert "14 bytes" in text
        shared = box.root / ".toolcage/shared"
        assert (shared / "key.txt").read_bytes() == b"sk-secret-123\n"
        assert stat.S_IMODE((shared / "key.txt").stat().st_mode) == 0o600
        assert os.listdir(shared) == ["key.txt"]  # no temporary file left
        message = await box.fails(
            "vault_copyto", "execution_error", item="api-key", path="/shared/key.txt"
        )
        assert "already exists" in message
        (box.root / "vault/api-key").write_bytes(b"new")
        await box.text("vault_copyto", item="api-key", path="/shared/key.txt", overwrite=True)
        assert (shared / "key.txt").read_bytes() == b"new"

    async def test_copy_into_tmp(self, box: Box) -> None:
        (box.root / "vault/token").write_bytes(b"t")
        await box.text("vault_copyto", item="token", path="/tmp/token")
        assert (box.root / ".toolcage/tmp/token").read_bytes() == b"t"

    @pytest.mark.parametrize("item", ["../toolcage.toml", "a/b", ".hidden", "..", "x\x01"])
    async def test_names_are_literal(self, box: Box, item: str) -> None:
        await box.fails("vault_copyto", "validation_error", item=item, path="/shared/out")
        assert not (box.root / ".toolcage/shared/out").exists()

    async def test_a_symbolic_link_is_not_followed(self, box: Box) -> None:
        (box.root / "outside").write_text("host file")
        (box.root / "vault/link").symlink_to(box.root / "outside")
        message = await box.fails(
            "vault_copyto", "permission_denied", item="link", path="/shared/o"
        )
        assert "symbolic link" in message
        assert not (box.root / ".toolcage/shared/o").exists()

    async def test_an_item_over_max_bytes_is_refused(self, box: Box) -> None:
        (box.root / "vault/big").write_bytes(b"x" * 65)
        message = await box.fails("vault_copyto", "execution_error", item="big", path="/shared/big")
        assert "max_bytes" in message
        assert not (box.root / ".toolcage/shared/big").exists()

    async def test_unknown_item(self, box: Box) -> None:
        message = await box.fails("vault_copyto", "validation_error", item="nope", path="/shared/n")
        assert "no item 'nope'" in message

    async def test_agents_copy_only_their_granted_items(self, box: Box) -> None:
        (box.root / "vault/api-key").write_bytes(b"k")
        (box.root / "vault/db-password").write_bytes(b"p")
        await box.text("vault_copyto", agent="helper", item="api-key", path="/shared/k")
        message = await box.fails(
            "vault_copyto",
            "permission_denied",
            agent="helper",
            item="db-password",
            path="/shared/p",
        )
        assert "may not copy" in message
        await box.fails(
            "vault_copyto", "permission_denied", agent="stranger", item="api-key", path="/shared/s"
        )
        assert sorted(os.listdir(box.root / ".toolcage/shared")) == ["k"]

    async def test_only_shared_and_tmp_are_destinations(self, box: Box) -> None:
        (box.root / "vault/api-key").write_bytes(b"k")
        message = await box.fails(
            "vault_copyto", "permission_denied", item="api-key", path="/workspace/k"
        )
        assert "/shared or /tmp" in message
        await box.fails("vault_copyto", "permission_denied", item="api-key", path="/etc/k")

    async def test_a_linked_destination_directory_is_not_followed(self, box: Box) -> None:
        (box.root / "vault/api-key").write_bytes(b"k")
        (box.root / "elsewhere").mkdir()
        shared = box.root / ".toolcage/shared"
        shared.mkdir(parents=True, exist_ok=True)
        (shared / "linked").symlink_to(box.root / "elsewhere")
        await box.fails(
            "vault_copyto", "permission_denied", item="api-key", path="/shared/linked/k"
        )
        assert list((box.root / "elsewhere").iterdir()) == []


class TestConcurrentCalls:
    async def test_parallel_saves_all_land(self, box: Box) -> None:
        async def save(i: int) -> None:
            await box.ok("memory_save", content=f"parallel note number{i}", tags=["batch"])

        async with anyio.create_task_group() as tg:
            for i in range(12):
                tg.start_soon(save, i)
        hits = await box.ok("memory_search", query="parallel note", top_k=20, tags=["batch"])
        expected = sorted(f"parallel note number{i}" for i in range(12))
        assert sorted(h["text"] for h in hits) == expected

    async def test_a_tool_whose_binding_is_taken_away_cannot_run(self, tmp_path: Path) -> None:
        async with box_at(tmp_path, CONFIG + "\n[egress.grants]\nmemory_save = []\n") as made:
            await made.fails("memory_save", "permission_denied", content="x")
            await made.ok("scratchpad_read")


class TestRemoteStore:
    """The same tools on a libSQL server endpoint (the test server of ``store/``), its token
    read from the environment variable the config names."""

    async def test_tools_reach_the_server_scoped_by_user(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("TC_TEST_LIBSQL_TOKEN", "remote-token")
        with LibsqlServer(tmp_path / "remote.db", token="remote-token") as server:  # noqa: S106
            text = (
                f'[state]\nurl = "{server.url}"\nauth_token_env = "TC_TEST_LIBSQL_TOKEN"\n'
                '[state.embedder]\nkind = "hash"\ndimensions = 32\n'
            )
            async with box_at(tmp_path, text) as box:
                saved = await box.ok("memory_save", content="remote note about herons")
                [hit] = await box.ok("memory_search", query="herons")
                assert hit["note_id"] == saved["note_id"]
                assert await box.ok("memory_search", user="bob", query="herons") == []
                await box.fails(
                    "memory_delete", "validation_error", user="bob", note_id=saved["note_id"]
                )
                await box.ok("scratchpad_write", items=["remote pad"])
                assert (await box.ok("scratchpad_read"))["items"] == ["remote pad"]
            assert not (tmp_path / ".toolcage/state.db").exists()

    async def test_a_wrong_token_is_an_execution_error_naming_the_url(self, tmp_path: Path) -> None:
        with LibsqlServer(tmp_path / "remote.db", token="right") as server:  # noqa: S106
            text = f'[state]\nurl = "{server.url}"\nauth_token = "wrong"\n'
            async with box_at(tmp_path, text) as box:
                message = await box.fails("scratchpad_read", "execution_error")
                assert server.url in message


class TestEmbedderChange:
    async def test_vectors_of_another_embedder_are_never_mixed(self, tmp_path: Path) -> None:
        async with box_at(tmp_path, CONFIG) as box:
            await box.ok("memory_save", content="saved with 64 dimensions")
        other = CONFIG.replace("dimensions = 64", "dimensions = 32")
        async with box_at(tmp_path, other) as box:
            message = await box.fails("memory_save", "execution_error", content="32 now")
            assert "64 dimensions" in message
            assert "data/state.db" in message
        async with box_at(tmp_path, '[state]\nurl = "data/state.db"\n') as box:
            [hit] = await box.ok("memory_search", query="dimensions")
            assert hit["text"] == "saved with 64 dimensions"
