"""The agent loop's own costs: stream decoding, request encoding, a round trip per round."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
from toolcage.runtime import (
    HttpModelClient,
    LoopLimits,
    Runtime,
    SafetyTier,
    ToolCall,
    ToolResult,
    tool,
)
from toolcage.runtime.agent._sse import parse_sse
from toolcage.runtime.providers import (
    AnthropicAdapter,
    AssistantMessage,
    ModelRequest,
    OpenAIChatAdapter,
    ToolOutcome,
    ToolResultsMessage,
    UserMessage,
)

from tests.runtime.fake_llm import API_KEY, MODEL, FakeModel, FakeModelServer, Reply, anthropic_sse

from .stats import ms, summarise, us

ROUNDS = 30


@tool(safety_tier=SafetyTier.READ_ONLY)
def bump(n: int) -> int:
    """Return n + 1."""
    return n + 1


def _stream_decoding() -> tuple[float, int]:
    calls = [(f"toolu_{i}", "bump", json.dumps({"n": i, "pad": "x" * 200})) for i in range(20)]
    text = "".join(
        (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
        for name, data in anthropic_sse(Reply("thinking", calls), 1)
    )
    lines = text.splitlines()
    events = sum(1 for _ in parse_sse(lines))
    samples = []
    for _ in range(200):
        started = time.perf_counter()
        decoder = AnthropicAdapter().stream_decoder()
        for event in parse_sse(lines):
            decoder.feed(event.event, json.loads(event.data))
        assert len(decoder.finish().message.calls) == 20
        samples.append(time.perf_counter() - started)
    return summarise(samples)[0] / events, events


def _encoding() -> float:
    messages: list[Any] = [UserMessage("start")]
    for i in range(20):
        c = ToolCall("bump", {"n": i}, f"call_{i}")
        messages.append(AssistantMessage("", (c,)))
        messages.append(ToolResultsMessage((ToolOutcome(c, ToolResult.text(str(i + 1))),)))
    request = ModelRequest(messages, [bump.schema()])
    adapter = OpenAIChatAdapter()
    samples = []
    for _ in range(500):
        started = time.perf_counter()
        adapter.request_body(request, model=MODEL, stream=False)
        samples.append(time.perf_counter() - started)
    return summarise(samples)[0]


async def _rounds(stream: bool) -> float:
    from toolcage.runtime import run_turn

    script = [Reply("", [(f"c{i}", "bump", json.dumps({"n": i}))]) for i in range(ROUNDS)]
    model = FakeModel("openai_chat", stream, [*script, Reply("done")])
    with FakeModelServer(model) as base_url:
        async with (
            Runtime(tools=[bump]) as runtime,
            HttpModelClient.for_provider(
                "openai_chat", base_url=base_url, api_key=API_KEY, model=MODEL, stream=stream
            ) as client,
        ):
            started = time.perf_counter()
            turn = await run_turn(
                client, runtime, [UserMessage("go")], limits=LoopLimits(max_rounds=100)
            )
            elapsed = time.perf_counter() - started
    assert turn.rounds == ROUNDS + 1
    return elapsed / turn.rounds


def run() -> list[str]:
    per_event, events = _stream_decoding()
    encode = _encoding()
    whole = anyio.run(_rounds, False)
    streamed = anyio.run(_rounds, True)
    return [
        f"Anthropic SSE decode + call assembly: {us(per_event)} per event "
        f"({events} events, 20 tool calls)",
        f"Chat Completions request body, 41-message conversation: {us(encode)}",
        f"loop round (HTTP to 127.0.0.1 + tool call), {ROUNDS + 1} rounds, JSON: "
        f"{ms(whole)} per round",
        f"loop round, SSE streaming: {ms(streamed)} per round",
    ]
