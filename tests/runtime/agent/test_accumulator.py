"""Streamed tool calls: server-sent events in, whole calls out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toolcage.runtime import (
    Runtime,
    ToolCall,
    ToolExecutionContext,
    UsageError,
)
from toolcage.runtime.agent._accumulator import ToolCallAccumulator
from toolcage.runtime.agent._sse import ServerSentEvent, parse_sse
from toolcage.runtime.providers import AnthropicAdapter, OpenAIChatAdapter

from ..sample_tools import echo

STREAMS = Path(__file__).parent / "streams"

# A Messages stream as the Anthropic API sends it: text, then two tool_use blocks whose
# argument fragments arrive split mid-token, with a ping in between; the second call's
# arguments never become valid JSON.
ANTHROPIC_SSE = (STREAMS / "anthropic_tool_use.sse").read_text()

# A Chat Completions stream (no event names, a comment line, usage in a last chunk, the
# [DONE] sentinel followed by data that must be ignored), with two calls whose fragments
# interleave by index.
OPENAI_SSE = (STREAMS / "openai_chat_tool_calls.sse").read_text()


class TestServerSentEvents:
    def test_fields_comments_multiline_data_and_done(self) -> None:
        text = (
            ': hello\nevent: a\ndata: {"x":\ndata: 1}\n\ndata: 2\r\n\r\ndata: [DONE]\n\ndata: 3\n\n'
        )
        assert list(parse_sse(text.splitlines())) == [
            ServerSentEvent("a", '{"x":\n1}'),
            ServerSentEvent("", "2"),
        ]


def decode(adapter: AnthropicAdapter | OpenAIChatAdapter, sse: str) -> tuple[ToolCall, ...]:
    decoder = adapter.stream_decoder()
    for event in parse_sse(sse.splitlines()):
        decoder.feed(event.event, json.loads(event.data))
    return decoder.finish().message.calls


class TestRecordedStreams:
    def test_anthropic_stream_assembles_calls_and_keeps_broken_json_as_text(self) -> None:
        calls = decode(AnthropicAdapter(), ANTHROPIC_SSE)
        assert calls == (
            ToolCall("echo", {"text": "San Francisco"}, "toolu_01T1x1fJ34qAmk2tNTrN7Up6"),
            ToolCall("echo", '{"text": tru', "toolu_02"),
        )

    def test_openai_stream_assembles_interleaved_calls_and_stops_at_done(self) -> None:
        calls = decode(OpenAIChatAdapter(), OPENAI_SSE)
        assert calls == (
            ToolCall("echo", {"text": "first"}, "call_aa"),
            ToolCall("echo", {"text": "second"}, "call_bb"),
        )


class TestToolCallAccumulator:
    def test_interleaved_pieces_come_out_in_start_order(self) -> None:
        acc = ToolCallAccumulator()
        acc.start(5, "b", "echo")
        acc.start(2, "a", "echo")
        acc.delta(2, '{"text": "from 2"}')
        acc.delta(5, '{"text": ')
        acc.delta(5, '"from 5"}')
        acc.end(5)
        acc.end(2)
        assert acc.finish() == (
            ToolCall("echo", {"text": "from 5"}, "b"),
            ToolCall("echo", {"text": "from 2"}, "a"),
        )

    def test_whole_arguments_missing_ids_and_final_text(self) -> None:
        acc = ToolCallAccumulator("gen_")
        acc.start("x", "", "echo", {"text": "whole"})
        acc.start("y", "", "echo")
        acc.start("z", "id_z", "echo")
        acc.delta("z", '{"text": "partial')
        acc.end("z", '{"text": "complete"}')
        x, y, z = acc.finish()
        assert x.arguments == {"text": "whole"}
        assert y.arguments == {}
        assert x.id.startswith("gen_")
        assert y.id.startswith("gen_")
        assert x.id != y.id
        assert z == ToolCall("echo", {"text": "complete"}, "id_z")

    def test_json_that_is_not_an_object_is_kept_as_text(self) -> None:
        acc = ToolCallAccumulator()
        acc.start(0, "c", "echo")
        acc.delta(0, "[1, 2]")
        assert acc.finish()[0].arguments == "[1, 2]"

    def test_misuse_is_a_usage_error(self) -> None:
        acc = ToolCallAccumulator()
        with pytest.raises(UsageError, match="no tool call started"):
            acc.delta(0, "{}")
        acc.start(0, "c", "echo")
        with pytest.raises(UsageError, match="already started"):
            acc.start(0, "d", "echo")

    @pytest.mark.anyio
    async def test_never_valid_json_becomes_a_validation_error_result(self) -> None:
        acc = ToolCallAccumulator()
        acc.start(0, "call_bad", "echo")
        acc.delta(0, '{"text": "never closed')
        (call,) = acc.finish()
        async with Runtime(tools=[echo]) as runtime:
            result = await runtime.execute_call(call, ToolExecutionContext())
        assert result.is_error
        assert result.error is not None
        assert result.error.kind.value == "validation_error"
        assert "not valid JSON" in result.output_text
