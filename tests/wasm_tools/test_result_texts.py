"""A result's text reaches the caller exactly as the guest wrote it: every byte a JSON
string would escape, characters beyond ASCII and NUL bytes unchanged, bytes that are not
UTF-8 each as U+FFFD -- whether it comes alone or beside details and a display line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toolcage.runtime import Runtime
from toolcage.wasm_tools.build import build_tool

pytestmark = pytest.mark.anyio

TRICKY = (
    'say "hi" \\ back\nslash\ttab\r\x01\x1f del\x7f caf\u00e9 \u2028 \U0001f600 \ufffd end\x00nul'
)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    tools = tmp_path / "tools"
    tools.mkdir()
    build_tool(Path(__file__).parent / "sdk_guests" / "texts.c", tools)
    declaration = {
        "name": "texts",
        "description": "Answer with the text asked for.",
        "parameters": {"type": "object", "properties": {"shape": {"type": "string"}}},
        "safety_tier": "read_only",
        "timeout": 10,
    }
    (tools / "texts.json").write_text(json.dumps(declaration))
    (tmp_path / "toolcage.toml").write_text('[guest_tools]\ndirs = ["tools"]\n')
    return tmp_path / "toolcage.toml"


async def test_every_character_arrives_as_written(config: Path) -> None:
    async with Runtime.from_config(config) as runtime:
        result = await runtime.execute("texts", {"shape": "tricky"})
    assert not result.is_error, result.output_text
    assert result.output_text == TRICKY
    assert (result.details, result.display) == (None, None)


async def test_beside_details_and_a_display_line(config: Path) -> None:
    async with Runtime.from_config(config) as runtime:
        result = await runtime.execute("texts", {"shape": "detailed"})
    assert not result.is_error, result.output_text
    assert result.output_text == TRICKY
    assert (result.details, result.display) == ({"n": 7}, "Answered")


async def test_bytes_that_are_not_utf8_each_become_a_replacement(config: Path) -> None:
    async with Runtime.from_config(config) as runtime:
        result = await runtime.execute("texts", {"shape": "invalid"})
    assert not result.is_error, result.output_text
    assert result.output_text == "caf\ufffd \ufffd\ufffd \ufffd\ufffd ok"
