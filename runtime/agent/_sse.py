"""Server-sent events, as the model providers stream them.

Only what the providers use of the format: ``event:`` and ``data:`` fields (several
``data:`` lines join with newlines), a blank line ends an event, lines starting with ``:``
are comments, and OpenAI's ``data: [DONE]`` sentinel ends the stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass

DONE = "[DONE]"


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One event."""

    event: str
    """The ``event:`` field, empty when absent."""
    data: str
    """The ``data:`` lines, joined."""


class _Parser:
    def __init__(self) -> None:
        self.event = ""
        self.data: list[str] = []

    def line(self, line: str) -> ServerSentEvent | None:
        line = line.rstrip("\r\n")
        if not line:
            if not self.data:
                self.event = ""
                return None
            sse = ServerSentEvent(self.event, "\n".join(self.data))
            self.event, self.data = "", []
            return sse
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self.event = value
        elif name == "data":
            self.data.append(value)
        return None

    def end(self) -> ServerSentEvent | None:
        return self.line("")


def parse_sse(lines: Iterable[str]) -> Iterator[ServerSentEvent]:
    """Events from lines of text; stops at ``[DONE]``."""
    parser = _Parser()
    for line in [*lines, ""]:
        event = parser.line(line)
        if event is not None:
            if event.data == DONE:
                return
            yield event


async def aparse_sse(lines: AsyncIterable[str]) -> AsyncIterator[ServerSentEvent]:
    """Events from an async stream of lines (``httpx.Response.aiter_lines()``)."""
    parser = _Parser()
    async for line in lines:
        event = parser.line(line)
        if event is not None:
            if event.data == DONE:
                return
            yield event
    event = parser.end()
    if event is not None and event.data != DONE:
        yield event
