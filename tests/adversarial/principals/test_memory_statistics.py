"""``memory_search`` ranks a user's notes and turns by that user's rows alone.

Whatever another user stores -- nothing, many notes and turns full of this user's query
words, or many full of other words -- this user's results, their scores, order and number
are the same: ranking and word selection read no statistic of anyone else's rows, so a
search cannot tell whether someone else's memory holds a word.

Each case runs the same script twice, on two fresh stores: bob (through both cast agents)
saves notes and holds turns (``run_turn`` with the scripted model), ada stores her variant
before and after him, and bob searches; only ada's part differs. Both backends (the
embedded file, the libSQL server endpoint), keyword-only and hybrid (``kind = "hash"``),
with and without ``include_conversation``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from toolcage.runtime import HttpModelClient, Runtime, ToolExecutionContext, run_turn
from toolcage.runtime.providers import UserMessage

from ...host_bindings.store.libsql_server import LibsqlServer
from ...runtime.fake_llm import API_KEY, MODEL, FakeModel, FakeModelServer, Reply
from ._cast import ADA, ADA_REVIEWER, BOB, BOB_REVIEWER, config_with_agents, context

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]

BOB_NOTES: tuple[tuple[str, list[str]], ...] = (
    ("kestrel hovering over the meadow at dawn", ["birds"]),
    ("juniper berries for the gin, juniper bush by the gate", ["garden"]),
    ("kestrel and juniper both near the old quarry", []),
    ("a long walk past the quarry, the meadow, the gate and the river, then a kestrel", []),
    ("heron fishing in the river", ["birds"]),
    ("river stones, river mist, heron again at the river bend", []),
    ("meadow flowers: clover, vetch, buttercup and juniper", ["garden"]),
    ("gate code 4411 for the quarry", []),
    ("kestrel kestrel kestrel, said the birder", ["birds"]),
    ("dawn chorus by the river", []),
    ("the quarry pond froze", []),
    ("juniper", []),
)
"""Bob's notes: his query words at different frequencies and in notes of different
lengths, so any change of the words' weights reorders them."""

BOB_TURNS: tuple[tuple[ToolExecutionContext, str, str], ...] = (
    (BOB, "Where did I see the kestrel?", "You saw a kestrel over the meadow by the quarry."),
    (BOB, "Remind me about the juniper", "The juniper bush grows by the gate."),
    (
        context("bob", "reviewer", "s2"),
        "What about the heron at the river?",
        "A heron was fishing in the river at dawn; the river was high.",
    ),
    (context("bob", session="s3"), "quarry gate code?", "4411, the quarry gate."),
)
"""Bob's turns (context, question, answer), in three sessions and through both agents."""

QUERIES: tuple[dict[str, Any], ...] = (
    {"query": "kestrel juniper"},
    {"query": "river heron meadow", "top_k": 3},
    {"query": "quarry gate dawn"},
    {"query": "kestrel", "tags": ["birds"]},
    {"query": "juniper meadow kestrel river quarry", "top_k": 10},
)

WORDS = ["kestrel", "juniper", "river", "heron", "meadow", "quarry", "gate", "dawn"]
OTHER_WORDS = ["zygote", "quokka", "xylem", "vellum", "ulna", "tundra", "sorrel", "raffia"]


def notes_of(words: list[str]) -> list[str]:
    """Ada's notes of ``words``: forty short ones, and fifty-five of 10,000 characters that
    the configured ``chunk_chars`` cuts into about a hundred chunks each (5,500 chunks in
    all: enough to push a word past a store-wide frequency cutoff of 5,000)."""
    rotations = [words[i % len(words) :] + words[: i % len(words)] for i in range(55)]
    short = [" ".join(rotations[i]) for i in range(40)]
    long = [((" ".join(rotations[j]) + " ") * 200)[:10_000] for j in range(55)]
    return short + long


ADA_STORES: dict[str, list[str]] = {
    "bobs-words": notes_of(WORDS),
    "other-words": notes_of(OTHER_WORDS),
}
"""What ada stores besides nothing (each set also makes her turns)."""


def config(url: str, mode: str) -> str:
    body = f'[state]\nurl = "{url}"\nchunk_chars = 100\n'
    if mode == "hybrid":
        body += '[state.embedder]\nkind = "hash"\ndimensions = 64\n'
    return body


@asynccontextmanager
async def store_url(root: Path, backend: str) -> AsyncIterator[str]:
    if backend == "embedded":
        yield "data/state.db"
        return
    with LibsqlServer(root / "remote.db") as server:
        yield server.url


async def hold_turns(
    runtime: Runtime, turns: Sequence[tuple[ToolExecutionContext, str, str]]
) -> None:
    """Each ``(context, question, answer)`` as one ``run_turn`` with the scripted model."""
    model = FakeModel("openai_chat", False, [Reply(answer) for _, _, answer in turns])
    with FakeModelServer(model) as base_url:
        async with HttpModelClient.for_provider(
            "openai_chat", base_url=base_url, api_key=API_KEY, model=MODEL
        ) as client:
            for ctx, question, answer in turns:
                done = await run_turn(client, runtime, [UserMessage(question)], context=ctx)
                assert done.text == answer


async def save(runtime: Runtime, ctx: ToolExecutionContext, content: str, tags: list[str]) -> None:
    result = await runtime.execute("memory_save", {"content": content, "tags": tags}, ctx)
    assert not result.is_error, result.output_text


async def ada_stores(runtime: Runtime, texts: Sequence[str]) -> None:
    """Ada's notes (through both her agents) and a turn of each short one."""
    for n, text in enumerate(texts):
        await save(runtime, ADA if n % 2 else ADA_REVIEWER, text, ["birds"] if n % 3 else [])
    short = [text for text in texts if len(text) < 1000]
    await hold_turns(runtime, [(ADA, text, text) for text in short])


async def bobs_results(tmp_path: Path, backend: str, mode: str, ada: str) -> list[Any]:
    """What bob's searches answer on a fresh store where ada stores ``ada`` ("nothing" or
    a key of :data:`ADA_STORES`): half of it before bob's notes, half after."""
    root = tmp_path / ada
    root.mkdir()
    texts = ADA_STORES.get(ada, [])
    async with store_url(root, backend) as url:
        path = config_with_agents(root, config(url, mode))
        async with Runtime.from_config(path) as runtime:
            await ada_stores(runtime, texts[::2])
            for n, (content, tags) in enumerate(BOB_NOTES):
                await save(runtime, BOB if n % 2 else BOB_REVIEWER, content, tags)
            await hold_turns(runtime, BOB_TURNS)
            await ada_stores(runtime, texts[1::2])
            found = []
            for args in QUERIES:
                for include_conversation in (False, True):
                    for ctx in (BOB, BOB_REVIEWER):
                        request = {**args, "include_conversation": include_conversation}
                        result = await runtime.execute("memory_search", request, ctx)
                        assert not result.is_error, result.output_text
                        found.append(comparable(result.output_text))
            return found


def comparable(output: str) -> list[dict[str, Any]]:
    """The hits without what differs between two stores anyway: the random note ids and
    the times of saving."""
    hits: list[dict[str, Any]] = json.loads(output.split("\n", 1)[0])
    for hit in hits:
        del hit["created_at"], hit["updated_at"]
        hit["note_id"] = hit["note_id"] is not None
    return hits


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
@pytest.mark.parametrize("backend", ["embedded", "remote"])
class TestBobsSearchIgnoresAdasRows:
    @pytest.mark.parametrize("ada", sorted(ADA_STORES))
    async def test_results_scores_order_and_counts_are_unchanged(
        self, tmp_path: Path, backend: str, mode: str, ada: str
    ) -> None:
        alone = await bobs_results(tmp_path, backend, mode, "nothing")
        assert any(alone), "bob's searches find nothing: the case tests nothing"
        beside = await bobs_results(tmp_path, backend, mode, ada)
        for query, (mine, with_ada) in enumerate(zip(alone, beside, strict=True)):
            assert with_ada == mine, f"search {query} changed when ada stored {ada}"
