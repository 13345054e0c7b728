"""Build-time fixes that make CPython behave inside a fresh WASIp2 instance.

componentize-py runs the app's top level once, at build time, and snapshots the result:
whatever this module patches is already patched in every instance, at no cost per call.
Each fix closes a trap measured on a component built without it:

- **Short writes.** With a host that captures stdout, one ``os.write`` of 100 000 bytes
  returned 8 192, and the unbuffered text layer silently dropped the rest: a long
  ``print`` lost everything after the first 8 KiB. :class:`FullWriter` loops until every
  byte is written, behind a 64 KiB buffer (:func:`fresh_streams`).
- **Waits the deadline cannot stop.** The host's epoch deadline is checked in wasm code
  only; a WASI poll blocks in the host, so ``time.sleep(5)`` or ``select.select(..., 5)``
  ran its full 5 s past a 1 s deadline. Every wait here is cut into slices of at most
  :data:`SLICE` seconds, so the deadline stops a sleeping call within one slice:
  ``time.sleep``, ``select.select``, ``select.poll`` and the selectors (which asyncio's
  event loop waits in).
- **asyncio.run.** The event loop opens a self-pipe with ``socket.socketpair``, which WASI
  refuses (``PermissionError``). Nothing can write to it here (no threads, no signals), so
  the loop runs without one.
- **zoneinfo.** There is no system time-zone database, and a bundled package's data files
  do not exist at run time (only what was imported is snapshotted). The zones of the
  bundled ``tzdata`` package are read into memory here and served from there.
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import selectors
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

SLICE = 0.01
"""The longest a single wait blocks in the host, in seconds: how late a deadline may stop a
sleeping call."""


# --- full writes ---------------------------------------------------------------------------


class FullWriter(io.RawIOBase):
    """A raw writer on a file descriptor that writes everything it is given.

    WASI stdout may accept only part of a write; the standard raw file reports that short
    count to a text layer that, unbuffered, drops the remainder. Looping here makes every
    write complete (the host side accepts all it is given, keeping what fits its cap).
    """

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            written = os.write(self._fd, view[done:])
            if written <= 0:  # a host that accepts nothing would make this loop spin
                raise BlockingIOError(f"fd {self._fd} accepted no bytes")
            done += written
        return len(view)


def _stream(fd: int) -> io.TextIOWrapper:
    buffered = io.BufferedWriter(FullWriter(fd), 1 << 16)
    return io.TextIOWrapper(buffered, encoding="utf-8", errors="backslashreplace")


def fresh_streams() -> None:
    """Give the code new, empty stdout and stderr.

    Called as the app's last build-time statement: text written while the standard library
    was preloaded (a warning of ``_ios_support`` went to stderr) would otherwise sit in the
    snapshotted buffers and come out at the start of every call. The old streams are
    flushed here, at build time, where nobody reads them.
    """
    for old in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # the build's streams: nothing lost
            old.flush()
    sys.stdout = sys.__stdout__ = _stream(1)  # type: ignore[misc]
    sys.stderr = sys.__stderr__ = _stream(2)  # type: ignore[misc]


# --- sliced waits --------------------------------------------------------------------------


def _slices(timeout: float | None) -> Iterable[float]:
    """The successive waits of at most :data:`SLICE` that add up to ``timeout`` (forever
    when None); at least one, so a zero timeout still polls once."""
    end = None if timeout is None else time.monotonic() + max(timeout, 0.0)
    while True:
        left = SLICE if end is None else end - time.monotonic()
        yield min(max(left, 0.0), SLICE)
        if end is not None and time.monotonic() >= end:
            return


_sleep = time.sleep


def sleep(secs: float) -> None:
    """``time.sleep`` in slices, so the host's deadline can stop it."""
    if secs < 0:
        raise ValueError("sleep length must be non-negative")
    for part in _slices(secs):
        _sleep(part)


_select = select.select


def sliced_select(
    rlist: Iterable[Any], wlist: Iterable[Any], xlist: Iterable[Any], timeout: float | None = None
) -> tuple[list[Any], list[Any], list[Any]]:
    """``select.select`` in slices: returns as soon as a slice finds something ready."""
    rlist, wlist, xlist = list(rlist), list(wlist), list(xlist)
    ready: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
    for part in _slices(timeout):
        ready = _select(rlist, wlist, xlist, part)
        if any(ready):
            break
    return ready


class SlicedPoll:
    """A ``select.poll()`` object whose ``poll`` waits in slices (the C type cannot be
    patched, so ``select.poll`` returns this wrapper)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.register: Callable[..., None] = inner.register
        self.modify: Callable[..., None] = inner.modify
        self.unregister: Callable[[Any], None] = inner.unregister

    def poll(self, timeout: float | None = None) -> list[tuple[int, int]]:
        """Like ``poll.poll``: ``timeout`` in milliseconds, None or negative for ever."""
        seconds = None if timeout is None or timeout < 0 else timeout / 1000
        events: list[tuple[int, int]] = []
        for part in _slices(seconds):
            events = self._inner.poll(int(part * 1000))
            if events:
                break
        return events


_poll = getattr(select, "poll", None)


def sliced_poll() -> SlicedPoll:
    """``select.poll()`` whose ``poll`` waits in slices."""
    if _poll is None:
        raise AttributeError("select.poll")
    return SlicedPoll(_poll())


def _slice_selector(cls: type[selectors.BaseSelector]) -> None:
    """Make each ``select`` of ``cls`` wait in slices (asyncio's event loop waits here)."""
    original = cls.select

    def select(
        self: selectors.BaseSelector, timeout: float | None = None
    ) -> list[tuple[selectors.SelectorKey, int]]:
        ready: list[tuple[selectors.SelectorKey, int]] = []
        for part in _slices(timeout):
            ready = original(self, part)
            if ready:
                break
        return ready

    cls.select = select  # type: ignore[method-assign]


time.sleep = sleep  # type: ignore[assignment]
select.select = sliced_select
if _poll is not None:
    select.poll = sliced_poll  # type: ignore[misc, assignment]
for _name in ("SelectSelector", "PollSelector"):
    if hasattr(selectors, _name):
        _slice_selector(getattr(selectors, _name))


# --- asyncio without a self-pipe -----------------------------------------------------------

import asyncio.selector_events as _selector_events  # noqa: E402  (after the sliced waits)


def _no_self_pipe(self: object) -> None:
    """The self-pipe only wakes a loop from another thread or a signal: neither exists."""


for _name in ("_make_self_pipe", "_close_self_pipe", "_write_to_self"):
    setattr(_selector_events.BaseSelectorEventLoop, _name, _no_self_pipe)


# --- zoneinfo from memory ------------------------------------------------------------------

import zoneinfo  # noqa: E402
import zoneinfo._common  # noqa: E402
import zoneinfo._tzpath  # noqa: E402

import tzdata  # type: ignore[import-untyped]  # noqa: E402


def _read_zones(root: str) -> dict[str, bytes]:
    """Every TZif file under ``root``, by key (``Europe/Paris``)."""
    zones: dict[str, bytes] = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if name.startswith("__init__") or name.endswith((".py", ".pyc", ".tab", ".zi")):
                continue
            path = os.path.join(folder, name)
            with open(path, "rb") as file:
                zones[os.path.relpath(path, root)] = file.read()
    return zones


ZONES = _read_zones(os.path.join(os.path.dirname(tzdata.__file__), "zoneinfo"))
"""The time zones of the bundled tzdata, read at build time."""


def load_tzdata(key: str) -> io.BytesIO:
    """``zoneinfo._common.load_tzdata`` over :data:`ZONES`."""
    try:
        return io.BytesIO(ZONES[key])
    except KeyError:
        raise zoneinfo.ZoneInfoNotFoundError(f"No time zone found with key {key}") from None


def available_timezones() -> set[str]:
    """``zoneinfo.available_timezones`` over :data:`ZONES`."""
    return set(ZONES)


zoneinfo._common.load_tzdata = load_tzdata  # type: ignore[assignment]
zoneinfo._tzpath.available_timezones = available_timezones
zoneinfo.available_timezones = available_timezones
