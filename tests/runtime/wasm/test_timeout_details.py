"""A guest stopped at its deadline reports the seconds elapsed and its limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolcage.runtime import Runtime

from .guest_tools import add_guest

pytestmark = pytest.mark.anyio


async def test_a_guest_timeout_carries_the_elapsed_seconds_and_the_limit(
    guest_wasm: dict[str, bytes], tmp_path: Path
) -> None:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "toolcage.toml").write_text("")
    async with Runtime.from_config(tmp_path / "toolcage.toml") as rt:
        add_guest(rt, "spin", guest_wasm["spin"], timeout=0.3)
        rt.pipeline.stop_grace = 60.0  # a busy machine still stops the guest first
        envelope = (await rt.execute("spin", {})).envelope()
    assert envelope["error_type"] == "timeout"
    assert envelope["message"] == "Tool spin timed out after 0.3 s"
    details = envelope["details"]
    assert details["timeout"] == 0.3
    assert details["elapsed"] >= 0.3
    assert details["retryable"] is True
