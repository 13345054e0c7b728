"""``send_media``: a WASI guest reads a file under the mounts, sniffs its type from its
bytes, and the runtime sends it through the host's channel to the caller's channel."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from toolcage.host_bindings import ChannelMessage, MessageKind
from toolcage.runtime import Runtime, ToolExecutionContext, ToolResult

pytestmark = pytest.mark.anyio

CTX = ToolExecutionContext(user_id="ada", channel_id="chat-7")
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(20)


@dataclass
class RecordingChannel:
    """A channel that keeps what it was sent (or refuses, when ``down``)."""

    sent: list[ChannelMessage] = field(default_factory=list)
    down: bool = False

    async def send(self, message: ChannelMessage) -> None:
        if self.down:
            raise ConnectionError("chat service unavailable")
        self.sent.append(message)


@dataclass
class Box:
    runtime: Runtime
    workspace: Path
    channel: RecordingChannel

    async def send(self, path: str, ctx: ToolExecutionContext = CTX) -> ToolResult:
        return await self.runtime.execute("send_media", {"path": path}, ctx)


async def box_in(root: Path, text: str = "", channel: RecordingChannel | None = None) -> Box:
    workspace = root / "workspace"
    workspace.mkdir(exist_ok=True)
    (root / "toolcage.toml").write_text(text)
    recorder = RecordingChannel() if channel is None else channel
    runtime = Runtime.from_config(root / "toolcage.toml", channel=recorder)
    return Box(runtime, workspace, recorder)


@pytest.fixture
async def box(tmp_path: Path) -> AsyncIterator[Box]:
    made = await box_in(tmp_path)
    async with made.runtime:
        yield made


class TestSending:
    async def test_sends_the_file_to_the_callers_channel_and_says_what_was_sent(
        self, box: Box
    ) -> None:
        (box.workspace / "chart.png").write_bytes(PNG)
        result = await box.send("/workspace/chart.png")
        assert not result.is_error, result.output_text
        said = json.loads(result.output_text)
        assert said == {
            "sent": "chart.png",
            "mime_type": "image/png",
            "bytes": len(PNG),
            "channel_id": "chat-7",
        }
        [message] = box.channel.sent
        assert message.kind is MessageKind.MEDIA
        assert (message.user_id, message.channel_id) == ("ada", "chat-7")
        [attachment] = message.attachments
        assert (attachment.name, attachment.media_type, attachment.data) == (
            "chart.png",
            "image/png",
            PNG,
        )

    async def test_a_relative_path_is_under_the_workspace(self, box: Box) -> None:
        (box.workspace / "notes.txt").write_text("hello\n")
        result = await box.send("notes.txt")
        assert not result.is_error, result.output_text
        assert box.channel.sent[0].attachments[0].data == b"hello\n"

    async def test_an_empty_file_is_sent(self, box: Box) -> None:
        (box.workspace / "empty").write_bytes(b"")
        result = await box.send("empty")
        assert not result.is_error, result.output_text
        assert json.loads(result.output_text)["bytes"] == 0


class TestSniffing:
    @pytest.mark.parametrize(
        ("name", "data", "media_type"),
        [
            ("a.txt", PNG, "image/png"),
            ("photo.png", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(16), "image/jpeg"),
            ("anim", b"GIF89a" + bytes(16), "image/gif"),
            ("old.gif", b"GIF87a" + bytes(16), "image/gif"),
            ("pic.bin", b"RIFF\x10\x00\x00\x00WEBPVP8 " + bytes(8), "image/webp"),
            ("report", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "application/pdf"),
            ("logo.xml", b'<svg xmlns="http://www.w3.org/2000/svg"></svg>', "image/svg+xml"),
            ("logo", b'\xef\xbb\xbf  <?xml version="1.0"?>\n<svg></svg>', "image/svg+xml"),
            ("feed.svg", b'<?xml version="1.0"?><rss></rss>', "application/xml"),
            ("notes.png", "café au lait\n".encode(), "text/plain"),
            ("blob.txt", b"\x00\x01\x02\x03binary", "application/octet-stream"),
            ("latin1.txt", b"caf\xe9\n", "application/octet-stream"),
        ],
    )
    async def test_the_type_comes_from_the_content_not_the_name(
        self, box: Box, name: str, data: bytes, media_type: str
    ) -> None:
        (box.workspace / name).write_bytes(data)
        result = await box.send(name)
        assert not result.is_error, result.output_text
        assert json.loads(result.output_text)["mime_type"] == media_type
        assert box.channel.sent[0].attachments[0].media_type == media_type


class TestRefusals:
    @pytest.mark.parametrize("path", ["/etc/passwd", "../toolcage.toml", "/workspace/../x"])
    async def test_a_path_outside_the_mounts_is_refused(self, box: Box, path: str) -> None:
        result = await box.send(path)
        assert result.error is not None
        assert result.error.kind.value == "permission_denied", result.output_text
        assert box.channel.sent == []

    async def test_a_link_out_of_the_mounts_is_not_followed(self, box: Box, tmp_path: Path) -> None:
        (tmp_path / "secret.txt").write_text("secret")
        os.symlink(tmp_path / "secret.txt", box.workspace / "link.txt")
        result = await box.send("link.txt")
        assert result.is_error
        assert box.channel.sent == []

    async def test_a_missing_file_is_not_found(self, box: Box) -> None:
        result = await box.send("nothing-here.png")
        assert result.is_error
        assert "nothing-here.png" in result.output_text
        assert box.channel.sent == []

    async def test_a_file_over_the_cap_is_refused_and_not_sent(self, tmp_path: Path) -> None:
        made = await box_in(tmp_path, "[channel]\nmax_media_bytes = 1000\n")
        async with made.runtime:
            (made.workspace / "big.png").write_bytes(PNG + bytes(1000))
            (made.workspace / "small.png").write_bytes(PNG)
            result = await made.send("big.png")
            assert result.error is not None
            assert result.error.kind.value == "validation_error"
            assert "max_media_bytes" in result.error.message
            assert made.channel.sent == []
            assert not (await made.send("small.png")).is_error

    async def test_a_cap_above_what_a_guest_reads_fails_at_load(self, tmp_path: Path) -> None:
        with pytest.raises(Exception, match=r"channel\.max_media_bytes"):
            await box_in(tmp_path, "[channel]\nmax_media_bytes = 999999999\n")

    async def test_without_a_channel_nothing_is_read(self, tmp_path: Path) -> None:
        (tmp_path / "workspace").mkdir()
        (tmp_path / "toolcage.toml").write_text("")
        async with Runtime.from_config(tmp_path / "toolcage.toml") as runtime:
            result = await runtime.execute("send_media", {"path": "x.png"}, CTX)
        assert result.error is not None
        assert result.error.kind.value == "execution_error"
        assert "no channel" in result.error.message

    async def test_a_channel_that_fails_makes_the_call_fail(self, tmp_path: Path) -> None:
        made = await box_in(tmp_path, channel=RecordingChannel(down=True))
        async with made.runtime:
            (made.workspace / "chart.png").write_bytes(PNG)
            result = await made.send("chart.png")
        assert result.error is not None
        assert result.error.kind.value == "execution_error"
        assert "chart.png" in result.error.message
        assert "chat service unavailable" in result.error.message
