"""Images from tools, held to the ``[images]`` limits before a model receives them.

Each image block of a result is identified by its first bytes, not by the type the tool
declared: PNG, JPEG, GIF and WebP, whose headers give the width and height (read here in
plain Python, no imaging library). Then:

- an image within the limits goes on, its ``mime_type`` set to the type its bytes show (a
  provider refuses an image whose declared type does not match);
- an image over a limit is replaced by a text block that says so -- "image 9,000×3,000 px
  (6.1 MB) exceeds the limit of 8,000×8,000 px / 5 MB; it was not sent" -- so the model
  learns why it sees no image, and the call's other output still reaches it;
- bytes of no known image type (or a header too broken to give a size) are replaced the
  same way, saying the type could not be determined.

Nothing is resized: shrinking an image needs a decoder (Pillow, a native dependency) and
decoding hostile image data in the host process is a risk of its own; a tool that wants a
smaller image makes one. The size limit applies to the base64 encoding, which is what
providers count.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass

from toolcage.policies import ImagesConfig

from ._result import ContentBlock, ImageContent, TextContent, ToolResult

_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE})
_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xD9)})


@dataclass(frozen=True, slots=True)
class ImageInfo:
    """What an image's header says."""

    mime_type: str
    width: int
    height: int


def image_info(data: bytes) -> ImageInfo | None:
    """The type and size of a PNG, JPEG, GIF or WebP image; ``None`` for anything else."""
    found: tuple[str, int, int] | None = None
    if data.startswith(_PNG):
        if len(data) >= 24 and data[12:16] == b"IHDR":
            found = ("image/png", *struct.unpack(">II", data[16:24]))
    elif data.startswith(b"\xff\xd8\xff"):
        found = _jpeg_size(data)
    elif data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        found = ("image/gif", *struct.unpack("<HH", data[6:10]))
    elif data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        found = _webp_size(data)
    if found is None or found[1] <= 0 or found[2] <= 0:
        return None
    return ImageInfo(*found)


def _jpeg_size(data: bytes) -> tuple[str, int, int] | None:
    """The size in the first start-of-frame segment, walking the segments before it."""
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in _JPEG_STANDALONE:
            at += 2
            continue
        if marker in (0xD9, 0xDA):  # the image ends or its scan starts with no frame
            return None
        length = int.from_bytes(data[at + 2 : at + 4], "big")
        if length < 2:
            return None
        if marker in _JPEG_SOF:
            if at + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return "image/jpeg", width, height
        at += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[str, int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return "image/webp", width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return "image/webp", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return "image/webp", width, height
    return None


def limit_images(result: ToolResult, limits: ImagesConfig) -> ToolResult:
    """``result`` with each image block checked against ``limits`` (see the module doc)."""
    blocks: list[ContentBlock] = []
    changed = False
    for block in result.content:
        if isinstance(block, ImageContent):
            checked = _checked(block, limits)
            changed = changed or checked is not block
            blocks.append(checked)
        else:
            blocks.append(block)
    return dataclasses.replace(result, content=tuple(blocks)) if changed else result


def _checked(image: ImageContent, limits: ImagesConfig) -> ContentBlock:
    info = image_info(image.data)
    sent = 4 * ((len(image.data) + 2) // 3)
    if info is None:
        return TextContent(
            f"an image of {_megabytes(sent)} (declared {image.mime_type!r}) was not sent: its "
            "type could not be determined from its bytes (PNG, JPEG, GIF and WebP are sent)"
        )
    if info.width > limits.max_width or info.height > limits.max_height or sent > limits.max_bytes:
        return TextContent(
            f"image {info.width:,}×{info.height:,} px ({_megabytes(sent)}) exceeds the limit "
            f"of {limits.max_width:,}×{limits.max_height:,} px / {_megabytes(limits.max_bytes)}"
            "; it was not sent"
        )
    if info.mime_type != image.mime_type:
        return ImageContent(image.data, info.mime_type)
    return image


def _megabytes(size: int) -> str:
    text = f"{size / (1 << 20):.1f}".removesuffix(".0")
    return f"{text} MB" if text != "0" else f"{size:,} bytes"
