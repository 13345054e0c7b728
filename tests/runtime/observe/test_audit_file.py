"""The audit file under stress, through Runtime.from_config and execute: a full disk tears
no line and repeats no record, and processes sharing one rotating log keep every record
exactly once."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from toolcage.runtime import Runtime

from ...wasm_tools._tmpfs import tmpfs
from .test_audit import HOST_TOOLS, until, write_config

pytestmark = pytest.mark.anyio

WRITER = Path(__file__).with_name("audit_writer.py")


def texts(log: Path, *, live: bool = False) -> list[str]:
    """The ``text`` argument of each call recorded in ``log`` and its rotated files,
    oldest first; every line must be one whole record. ``live``: the log is being written,
    and the bytes after its last newline (an append in progress, or one about to be cut
    back) are not looked at."""
    found = []
    for file in sorted(log.parent.glob(f"{log.name}*"), key=_age):
        if file.name.endswith(".lock"):
            continue
        data = file.read_bytes()
        if live:
            data = data[: data.rfind(b"\n") + 1]
        assert data.endswith(b"\n") or not data, f"{file.name} ends with a torn line"
        for line in data.splitlines():
            record: dict[str, Any] = json.loads(line)  # a torn line fails here
            if record["type"] == "call":
                found.append(record["arguments"]["text"])
    return found


def _age(file: Path) -> int:
    """Rotated files first, the oldest (highest number) first; the log itself last."""
    suffix = file.name.rpartition(".")[2]
    return -int(suffix) if suffix.isdigit() else 0


def fill(directory: Path) -> Path:
    """Take every free byte of the file system of ``directory`` with a file of its own."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        with pytest.raises(OSError, match="No space left on device"):
            _write_forever(fd)
    finally:
        os.close(fd)
    return filler


def _write_forever(fd: int) -> None:
    while True:
        os.write(fd, b"\0" * 4096)


class TestFullDisk:
    """The log on a 64 KiB tmpfs that fills up, with records waiting to be written."""

    @pytest.fixture
    def logs(self, tmp_path: Path) -> Iterator[Path]:
        with tmpfs(tmp_path / "logs", "64k") as where:
            yield where

    async def test_no_torn_or_repeated_line_and_the_loss_is_logged(
        self, tmp_path: Path, logs: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        config = write_config(tmp_path, audit='path = "logs/audit.jsonl"\nretry_seconds = 0.02')
        log = logs / "audit.jsonl"
        caplog.set_level(logging.WARNING, logger="toolcage.audit")
        filler = fill(logs)
        os.truncate(filler, os.stat(filler).st_size - 4096)  # one page left: a few records
        async with Runtime.from_config(config, tools=HOST_TOOLS) as runtime:
            for number in range(40):
                assert not (await runtime.execute("echo", {"text": f"a{number}"})).is_error
            await until(lambda: any("the sink failed" in r.message for r in caplog.records))
            [failed] = [r for r in caplog.records if "the sink failed" in r.message]
            assert getattr(failed, "event", None) == "audit.sink_failed"
            assert "No space left on device" in getattr(failed, "error", "")
            kept = texts(log, live=True)
            assert 0 < len(kept) < 40
            assert kept == [f"a{n}" for n in range(len(kept))]  # whole lines, none twice

            filler.unlink()  # room again: the held records land, each once
            await until(lambda: len(texts(log, live=True)) == 40)
            assert texts(log) == [f"a{n}" for n in range(40)]

            fill(logs)
            for number in range(30):
                assert not (await runtime.execute("echo", {"text": f"b{number}"})).is_error
        written = texts(log)[40:]
        assert written == [f"b{n}" for n in range(len(written))]
        [lost] = [r for r in caplog.records if getattr(r, "event", None) == "audit.records_lost"]
        assert lost.levelno == logging.ERROR
        assert getattr(lost, "count", None) == 30 - len(written)
        assert lost.getMessage() == (
            f"audit log: closed with {30 - len(written)} records the sink did not take"
        )


class TestProcessesSharingALog:
    def test_every_record_once_across_rotations(self, tmp_path: Path) -> None:
        audit = 'path = "audit.jsonl"\nrotate_bytes = 4096\nkeep = 1000'
        config = write_config(tmp_path, audit=audit)
        go = tmp_path / "go"
        writers = [
            subprocess.Popen(
                [sys.executable, str(WRITER), str(config), tag, "300", str(go)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for tag in ("p0", "p1", "p2")
        ]
        go.touch()
        for writer in writers:
            _, err = writer.communicate()
            assert writer.returncode == 0, err
        log = tmp_path / "audit.jsonl"
        found = texts(log)
        expected = {f"{tag}-{n}" for tag in ("p0", "p1", "p2") for n in range(300)}
        assert set(found) == expected
        assert [t for t, n in Counter(found).items() if n > 1] == []
        for tag in ("p0", "p1", "p2"):  # each process's records in its order
            assert [t for t in found if t.startswith(f"{tag}-")] == [
                f"{tag}-{n}" for n in range(300)
            ]
        rotated = [p for p in tmp_path.glob("audit.jsonl.*") if p.suffix != ".lock"]
        assert len(rotated) > 20
        assert all(p.stat().st_size <= 4096 for p in [log, *rotated])
