"""Capturing a guest's stdout/stderr with a byte cap, without holding more than the cap.

wasmtime hands every write to :meth:`CappedOutput.write`; bytes past the cap are counted and
dropped (the guest is told they were written, so a chatty guest runs to its end rather than
failing on a short write), so a guest printing 100 MB costs the host ``cap`` bytes.
"""

from __future__ import annotations


class CappedOutput:
    """An output stream that keeps its first ``cap`` bytes and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        """Bytes kept at most."""
        self.total = 0
        """Bytes the guest wrote."""
        self._data = bytearray()

    def write(self, data: bytes) -> int:
        """Accept one write of the guest; always reports it fully written."""
        room = self.cap - len(self._data)
        if room > 0:
            self._data += data[:room]
        self.total += len(data)
        return len(data)

    @property
    def truncated(self) -> bool:
        """Whether bytes were dropped."""
        return self.total > len(self._data)

    def getvalue(self) -> bytes:
        """The bytes kept."""
        return bytes(self._data)
