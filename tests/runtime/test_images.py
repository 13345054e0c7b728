"""Images from tools are held to the ``[images]`` limits before a model sees them: an image
over a limit, or of a type its bytes do not show, becomes a text block that says why."""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from toolcage.runtime import (
    HttpModelClient,
    ImageContent,
    Runtime,
    SafetyTier,
    TextContent,
    ToolResult,
    run_turn,
    tool,
)
from toolcage.runtime._images import image_info
from toolcage.runtime.providers import UserMessage

from .fake_llm import API_KEY, MODEL, FakeModel, FakeModelServer, Reply

pytestmark = pytest.mark.anyio


def png(width: int, height: int, *, padding: int = 0) -> bytes:
    """A valid 8-bit greyscale PNG of zero pixels, with a text chunk of ``padding`` bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    rows = b"".join(b"\0" + bytes(width) for _ in range(height))
    parts = [chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))]
    if padding:
        parts.append(chunk(b"tEXt", b"Comment\0" + b"x" * padding))
    parts += [chunk(b"IDAT", zlib.compress(rows)), chunk(b"IEND", b"")]
    return b"\x89PNG\r\n\x1a\n" + b"".join(parts)


def jpeg(width: int, height: int) -> bytes:
    """JPEG headers: SOI, a JFIF APP0 segment, a baseline start-of-frame, EOI."""
    app0 = b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0"
    sof0 = struct.pack(">BHH", 8, height, width) + b"\x03\x01\x22\0\x02\x11\x01\x03\x11\x01"
    return (
        b"\xff\xd8"
        + b"\xff\xe0"
        + struct.pack(">H", len(app0) + 2)
        + app0
        + b"\xff\xc0"
        + struct.pack(">H", len(sof0) + 2)
        + sof0
        + b"\xff\xd9"
    )


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\0\0\0;"


def webp(width: int, height: int) -> bytes:
    vp8x = b"\0\0\0\0" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    body = b"WEBP" + b"VP8X" + struct.pack("<I", len(vp8x)) + vp8x
    return b"RIFF" + struct.pack("<I", len(body)) + body


IMAGES = {
    "small_png": png(4, 3),
    "jpeg_called_png": jpeg(64, 48),
    "wide_png": png(9000, 3),
    "tall_gif": gif(2, 101),
    "heavy_png": png(2, 2, padding=5000),
    "garbage": b"this is not an image at all",
    "broken_jpeg": b"\xff\xd8\xff\xe0\x00",
}


@tool(safety_tier=SafetyTier.READ_ONLY)
def snapshot(kind: str) -> ToolResult:
    """Return a caption and one image of the given kind."""
    return ToolResult(content=(TextContent(f"caption of {kind}"), ImageContent(IMAGES[kind])))


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "toolcage.toml").write_text(
        "[images]\nmax_width = 100\nmax_height = 100\nmax_bytes = 4000\n"
    )
    async with Runtime.from_config(tmp_path / "toolcage.toml", tools=[snapshot]) as runtime:
        yield runtime


def images(result: ToolResult) -> list[ImageContent]:
    return [b for b in result.content if isinstance(b, ImageContent)]


class TestImageInfo:
    @pytest.mark.parametrize(
        ("data", "expected"),
        [
            (png(640, 480), ("image/png", 640, 480)),
            (jpeg(1920, 1080), ("image/jpeg", 1920, 1080)),
            (gif(17, 9), ("image/gif", 17, 9)),
            (webp(8001, 2), ("image/webp", 8001, 2)),
        ],
        ids=["png", "jpeg", "gif", "webp"],
    )
    def test_the_header_gives_type_and_size(
        self, data: bytes, expected: tuple[str, int, int]
    ) -> None:
        info = image_info(data)
        assert info is not None
        assert (info.mime_type, info.width, info.height) == expected

    @pytest.mark.parametrize(
        "data",
        [
            b"",
            b"\x89PNG\r\n\x1a\n",
            IMAGES["broken_jpeg"],
            b"\xff\xd8\xff\xda",
            b"RIFF....WEBPVP8 ",
        ],
        ids=["empty", "png-without-ihdr", "jpeg-cut-short", "jpeg-without-frame", "webp-cut"],
    )
    def test_broken_or_unknown_bytes_have_no_size(self, data: bytes) -> None:
        assert image_info(data) is None


class TestLimits:
    async def test_an_image_within_the_limits_is_sent(self, runtime: Runtime) -> None:
        result = await runtime.execute("snapshot", {"kind": "small_png"})
        assert [i.data for i in images(result)] == [IMAGES["small_png"]]

    async def test_the_type_its_bytes_show_replaces_the_declared_one(
        self, runtime: Runtime
    ) -> None:
        result = await runtime.execute("snapshot", {"kind": "jpeg_called_png"})
        assert [i.mime_type for i in images(result)] == ["image/jpeg"]

    async def test_an_image_too_wide_becomes_a_note(self, runtime: Runtime) -> None:
        result = await runtime.execute("snapshot", {"kind": "wide_png"})
        assert not result.is_error
        assert images(result) == []
        caption, note = result.output_text.split("\n")
        assert caption == "caption of wide_png"
        assert note.startswith("image 9,000×3 px (")
        assert note.endswith("exceeds the limit of 100×100 px / 4,000 bytes; it was not sent")

    async def test_an_image_too_tall_becomes_a_note(self, runtime: Runtime) -> None:
        result = await runtime.execute("snapshot", {"kind": "tall_gif"})
        assert images(result) == []
        assert "image 2×101 px" in result.output_text

    async def test_an_image_too_heavy_becomes_a_note(self, runtime: Runtime) -> None:
        result = await runtime.execute("snapshot", {"kind": "heavy_png"})
        assert images(result) == []
        assert "image 2×2 px (" in result.output_text
        assert "4,000 bytes; it was not sent" in result.output_text

    @pytest.mark.parametrize("kind", ["garbage", "broken_jpeg"])
    async def test_an_image_of_unknown_type_is_refused(self, runtime: Runtime, kind: str) -> None:
        result = await runtime.execute("snapshot", {"kind": kind})
        assert images(result) == []
        assert "its type could not be determined" in result.output_text
        assert "(declared 'image/png')" in result.output_text

    async def test_the_defaults_are_8000_pixels_and_5_megabytes(self) -> None:
        async with Runtime(tools=[snapshot]) as runtime:
            result = await runtime.execute("snapshot", {"kind": "wide_png"})
        assert images(result) == []
        assert "exceeds the limit of 8,000×8,000 px / 5 MB; it was not sent" in (result.output_text)


class TestInATurn:
    async def test_the_model_gets_the_note_instead_of_the_image(self, runtime: Runtime) -> None:
        model = FakeModel(
            "anthropic", False, [Reply("", [("s1", "snapshot", '{"kind": "wide_png"}')])]
        )
        with FakeModelServer(model) as base_url:
            async with HttpModelClient.for_provider(
                "anthropic", base_url=base_url, api_key=API_KEY, model=MODEL
            ) as client:
                await run_turn(client, runtime, [UserMessage("Look.")])
        sent = json.dumps(model.requests[1].body, ensure_ascii=False)
        assert "exceeds the limit of 100×100 px" in sent
        assert '"type": "image"' not in sent
