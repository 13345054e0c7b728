"""Bounded keepers for a command's output: it is read to the end, but only so much is kept.

A command that floods its output is drained (so it never blocks on a full pipe) and the
excess is counted, not stored. A foreground command keeps its head and its tail -- the
first lines say what it did, the last ones how it ended -- with the truncation marker
(:func:`toolcage.policies.truncation_marker`) in the gap. A background command keeps a ring
of its latest output, read incrementally by polls; a read that lost bytes to the ring starts
with the marker.
"""

from __future__ import annotations

from toolcage.policies import truncation_marker


class HeadTail:
    """The first and last bytes of a stream, up to ``limit`` in all."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        """Bytes seen, kept or not."""
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            if len(self._tail) > 2 * self._tail_limit:
                del self._tail[: len(self._tail) - self._tail_limit]

    @property
    def dropped(self) -> int:
        return max(0, self.total - self._head_limit - self._tail_limit)

    def text(self) -> str:
        """What was kept, with a marker where bytes were dropped."""
        tail = bytes(self._tail[-self._tail_limit :]) if self._tail_limit else b""
        head = bytes(self._head)
        if not self.dropped:
            return (head + tail).decode("utf-8", "replace")
        marker = truncation_marker(self.total, first=len(head), last=len(tail))
        return f"{head.decode('utf-8', 'replace')}\n{marker}\n{tail.decode('utf-8', 'replace')}"


class Ring:
    """The latest ``limit`` bytes of a stream, read from a moving cursor."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._data = bytearray()
        self.cursor = 0
        """Stream offset up to which a reader has taken the output."""

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        self._data += data
        if len(self._data) > 2 * self.limit:
            del self._data[: len(self._data) - self.limit]

    def take(self) -> tuple[str, int]:
        """Output since the last take, and how many bytes of it were lost to the ring.

        When bytes were lost, the text starts with the truncation marker.
        """
        kept = min(len(self._data), self.limit)
        start = self.total - kept
        dropped = max(0, start - self.cursor)
        begin = max(self.cursor, start) - (self.total - len(self._data))
        chunk = bytes(self._data[begin:])
        text = chunk.decode("utf-8", "replace")
        if dropped:
            text = f"{truncation_marker(self.total - self.cursor, last=len(chunk))}\n{text}"
        self.cursor = self.total
        return text, dropped

    @property
    def pending(self) -> bool:
        return self.cursor < self.total
