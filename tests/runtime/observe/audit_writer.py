"""A process that writes audit records: ``python audit_writer.py CONFIG TAG COUNT [GO]``.

Opens ``Runtime.from_config(CONFIG)`` with an ``echo`` tool, waits until the file ``GO``
exists (when given, so that several writers start together), then makes COUNT calls of
``echo`` with the text ``TAG-N`` and closes the runtime, which writes every record.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from toolcage.runtime import Runtime, SafetyTier, tool


@tool(safety_tier=SafetyTier.READ_ONLY)
def echo(text: str) -> str:
    """Give the text back.

    Args:
        text: Any text.
    """
    return text


async def main(config: Path, tag: str, count: int, go: Path | None) -> None:
    async with Runtime.from_config(config, tools=[echo]) as runtime:
        # A file another process creates, polled: nothing of this process to wait on.
        while go is not None and not go.exists():  # noqa: ASYNC110, ASYNC240
            await anyio.sleep(0.01)
        for number in range(count):
            result = await runtime.execute("echo", {"text": f"{tag}-{number}"})
            assert not result.is_error, result.output_text


if __name__ == "__main__":
    go = Path(sys.argv[4]) if len(sys.argv) > 4 else None
    anyio.run(main, Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), go)
