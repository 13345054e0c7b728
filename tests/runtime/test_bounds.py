"""Every part of a result is bounded, and what was cut stays readable by its handle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from toolcage.runtime import (
    ImageContent,
    Runtime,
    SafetyTier,
    TextContent,
    ToolExecutionError,
    ToolResult,
    tool,
)
from toolcage.runtime._bounds import IMAGE_BYTES

pytestmark = pytest.mark.anyio

LIMIT = 16 * 1024
HUNDRED_MB = 100 * 1000 * 1000


@tool(safety_tier=SafetyTier.READ_ONLY)
def big_list() -> list[str]:
    """Return a list whose JSON is 100 MB."""
    return ["x" * 996] * (HUNDRED_MB // 1000)  # 1,000 bytes each, with ", "


@tool(safety_tier=SafetyTier.READ_ONLY)
def big_parts() -> ToolResult:
    """Return small text with a large display and large details."""
    return ToolResult.text("small", details={"rows": ["é" * 100] * 1000}, display="d" * 100_000)


@tool(safety_tier=SafetyTier.READ_ONLY)
def big_failure() -> str:
    """Fail with a 10 MB message."""
    raise ToolExecutionError("broken: " + "y" * 10_000_000)


@tool(safety_tier=SafetyTier.READ_ONLY)
def surrogate_text() -> ToolResult:
    """Return text no UTF-8 encoder accepts."""
    return ToolResult.text("a\udc80b", display="c\ud800")


@tool(safety_tier=SafetyTier.READ_ONLY)
def images() -> ToolResult:
    """Return two images whose sum is over the image limit."""
    png_1x1 = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")
    half = ImageContent(png_1x1 + b"\0" * (IMAGE_BYTES // 2 + 1))
    return ToolResult(content=(TextContent("two images"), half, half))


@tool(safety_tier=SafetyTier.READ_ONLY)
def not_json() -> ToolResult:
    """Return details that are not JSON."""
    return ToolResult.text("ok", details={"when": object()})


def sent(envelope: dict[str, Any]) -> bytes:
    """The envelope as a host sends it on."""
    return json.dumps(envelope, ensure_ascii=False).encode("utf-8")


async def read_all(runtime: Runtime, handle: str, size: int) -> bytes:
    data = b""
    while len(data) < size:
        page = await runtime.execute(
            "tool_output_read", {"handle": handle, "offset": len(data), "max_bytes": LIMIT}
        )
        assert not page.is_error, page.envelope()
        data += page.output_text.encode()
        if page.details["eof"]:
            break
    return data


@pytest.fixture
async def runtime(tmp_path: Path) -> Any:
    (tmp_path / "workspace").mkdir()
    config = tmp_path / "toolcage.toml"
    config.write_text(
        '[[mounts.areas]]\nhost = "workspace"\nguest = "/workspace"\ntiers = { read_only = "ro" }\n'
        "[images]\nmax_bytes = 20000000\n"
    )
    tools = [big_list, big_parts, big_failure, surrogate_text, images, not_json]
    async with Runtime.from_config(config, tools=tools) as runtime:
        yield runtime


class TestDetails:
    async def test_a_hundred_megabyte_list_gives_a_small_envelope(self, runtime: Runtime) -> None:
        result = await runtime.execute("big_list", {})
        envelope = result.envelope()
        assert len(sent(envelope)) < 3 * LIMIT
        details = envelope["details"]
        assert details["truncated"] is True
        assert details["original_bytes"] == HUNDRED_MB
        assert f'handle "{details["handle"]}"' in details["note"]
        assert envelope["result"].startswith('["xxx')
        assert "[output truncated — original size: 100,000,000 bytes]" in envelope["result"]
        # The text is the same JSON: one copy kept, under one handle.
        assert f'handle "{details["handle"]}"' in envelope["result"]

    async def test_truncated_details_are_readable_by_their_handle(self, runtime: Runtime) -> None:
        details = (await runtime.execute("big_parts", {})).envelope()["details"]
        assert details["truncated"] is True
        full = await read_all(runtime, details["handle"], details["original_bytes"])
        assert json.loads(full) == {"rows": ["é" * 100] * 1000}

    async def test_small_details_are_kept_as_they_are(self, runtime: Runtime) -> None:
        page = await runtime.execute("tool_output_read", {"handle": "out_missing"})
        assert page.envelope()["error_type"] == "not_found"
        result = await runtime.execute("big_list", {})
        handle = result.envelope()["details"]["handle"]
        first = await runtime.execute("tool_output_read", {"handle": handle, "max_bytes": 10})
        assert first.details == {
            "handle": handle,
            "offset": 0,
            "next_offset": 10,
            "total_bytes": first.details["total_bytes"],
            "eof": False,
        }

    async def test_details_that_are_not_json_are_replaced_by_a_note(self, runtime: Runtime) -> None:
        envelope = (await runtime.execute("not_json", {})).envelope()
        assert envelope["details"]["omitted"] is True
        assert "not JSON" in envelope["details"]["note"]
        sent(envelope)


class TestOtherParts:
    async def test_display_is_cut_and_kept(self, runtime: Runtime) -> None:
        result = await runtime.execute("big_parts", {})
        assert result.display is not None
        assert result.display.startswith("d" * LIMIT + "\n[output truncated")
        handle = result.display.split('handle "')[1].split('"')[0]
        assert await read_all(runtime, handle, 100_000) == b"d" * 100_000

    async def test_an_error_message_is_cut_and_kept(self, runtime: Runtime) -> None:
        envelope = (await runtime.execute("big_failure", {})).envelope()
        assert envelope["error_type"] == "execution_error"
        assert len(sent(envelope)) < 2 * LIMIT
        handle = envelope["message"].split('handle "')[1].split('"')[0]
        full = await read_all(runtime, handle, 10_000_008)
        assert full == b"broken: " + b"y" * 10_000_000

    async def test_text_that_cannot_be_encoded_is_escaped(self, runtime: Runtime) -> None:
        result = await runtime.execute("surrogate_text", {})
        assert result.output_text == "a\\udc80b"
        assert result.display == "c\\ud800"
        sent(result.envelope())

    async def test_images_over_the_limit_are_replaced_by_a_note(self, runtime: Runtime) -> None:
        result = await runtime.execute("images", {})
        kept = [b for b in result.content if isinstance(b, ImageContent)]
        assert len(kept) == 1
        assert "[image omitted: " in result.output_text
        assert result.output_text.startswith("two images")
