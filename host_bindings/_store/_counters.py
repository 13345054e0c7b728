"""Rate-limit counters in the state store, shared by every process that opens it.

A counter is one row of ``rate_counters``, changed by one ``INSERT … ON CONFLICT DO
UPDATE … RETURNING`` statement: the read, the decision and the write happen inside the
statement, so two processes (or two hosts on one libSQL server) taking from one counter
at once never both spend its last unit. The time is the caller's (``now``, in seconds),
so a test can move it instead of sleeping.

Two kinds of counter share the table:

- a **token bucket** (calls): ``level`` is the tokens left at ``stamp``; a take refills
  ``(now - stamp) * refill`` up to ``size``, then spends one token if there is one;
- a **fixed window** (bytes): ``level`` is what was spent since the window began at
  ``stamp``; a take in a window that has ended starts a new one, then grants as much of
  ``amount`` as is left (possibly less, possibly nothing).

``granted`` holds what the last take granted, so ``RETURNING`` can say it.

The embedded store (:mod:`._counters_sqlite`) answers on the caller's thread when it can
do so at once: a connection of its own with no busy timeout tries first, and
:class:`WouldWait` tells the caller to try again where waiting is allowed (a worker thread)
when another writer holds the lock. A caller that may wait waits for the lock however SQLite
reports it: its busy handler covers most contention, but some (a log being restarted or
recovered by another process, a snapshot gone stale) is reported as ``SQLITE_BUSY`` or
``SQLITE_LOCKED`` at once, so :meth:`~._counters_sqlite.EmbeddedCounters.apply` tries again,
with growing pauses, until the busy timeout or the call's deadline
(:mod:`~toolcage.host_bindings._backends._waits`) -- contention is a wait, never an error of
the call.

That connection never checkpoints the write-ahead log itself (a checkpoint writes back
up to a thousand pages); when the log has grown, a background thread does, in ``RESTART``
mode, so that the next write starts the log over (a passive checkpoint would leave it
growing while writes keep coming); the writes it holds up meanwhile go to a worker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .._backends._errors import StoreError

Statement = tuple[str, Sequence[Any]]

_AVAILABLE = "min(?3, level + max(0, ?4 - stamp) * ?2)"

TAKE_CALL = f"""
    INSERT INTO rate_counters (key, level, stamp, granted) VALUES (?1, ?3 - 1, ?4, 1)
    ON CONFLICT (key) DO UPDATE SET
        granted = {_AVAILABLE} >= 1,
        level = {_AVAILABLE} - ({_AVAILABLE} >= 1),
        stamp = max(stamp, ?4)
    RETURNING level, stamp, granted"""
"""Spend one token of a bucket (bound as ``key, refill per second, size, now``)."""

RETURN_CALL = "UPDATE rate_counters SET level = min(?2, level + 1) WHERE key = ?1"
"""Give a spent token back (bound as ``key, size``)."""

_ENDED = "?5 >= stamp + ?3"
_LEFT = "max(0, min(?4, ?2 - level))"

TAKE_BYTES = f"""
    INSERT INTO rate_counters (key, level, stamp, granted)
    VALUES (?1, min(?4, ?2), ?5, min(?4, ?2))
    ON CONFLICT (key) DO UPDATE SET
        granted = CASE WHEN {_ENDED} THEN min(?4, ?2) ELSE {_LEFT} END,
        level = CASE WHEN {_ENDED} THEN min(?4, ?2) ELSE level + {_LEFT} END,
        stamp = CASE WHEN {_ENDED} THEN ?5 ELSE stamp END
    RETURNING level, stamp, granted"""
"""Take up to ``amount`` of a window's quota (bound as ``key, quota, window, amount,
now``)."""

RETURN_BYTES = "UPDATE rate_counters SET level = max(0, level - ?3) WHERE key = ?1 AND stamp = ?2"
"""Give back what a take granted and nobody used (bound as ``key, window start,
amount``): only while the same window lasts."""

CHECKPOINT_PAGES = 1000
"""Log pages after which a background thread checkpoints (SQLite's own default)."""


@dataclass(frozen=True, slots=True)
class Take:
    """A counter after a take."""

    level: float
    """Tokens left (bucket) or units spent (window)."""
    stamp: float
    """When the bucket was last refilled, or when the window began."""
    granted: float
    """What the take granted."""


@dataclass(frozen=True, slots=True)
class Applied:
    """What :meth:`Counters.apply` did."""

    takes: list[Take | None]
    """Each statement's returned counter (``None`` for a statement that returns none)."""
    committed: bool
    """Whether the changes were kept (``keep`` said no and the store rolled them back)."""


Keep = Callable[[Sequence[Take | None]], bool]
"""Decides, from the takes, whether a transaction of several statements is kept."""


class WouldWait(StoreError):
    """The statements cannot run without waiting for another writer (or a server)."""


class Counters(Protocol):
    """Rate-limit counters of a store. Thread-safe."""

    def apply(
        self, statements: Sequence[Statement], *, wait: bool = True, keep: Keep | None = None
    ) -> Applied:
        """Run ``statements`` in one transaction, kept unless ``keep`` says otherwise (a
        store that cannot roll back keeps them). ``wait=False``: raise :class:`WouldWait`
        rather than wait for another writer."""
        ...


def take_of(rows: Sequence[Sequence[Any]]) -> Take | None:
    """The counter a statement returned (its first row), if it returned one."""
    return Take(float(rows[0][0]), float(rows[0][1]), float(rows[0][2])) if rows else None


class RemoteCounters:
    """:class:`Counters` on a libSQL server: one request per :meth:`apply` (a batch is one
    transaction). It always waits for the server, so ``wait=False`` raises
    :class:`WouldWait`."""

    def __init__(
        self,
        execute: Callable[[str, Sequence[Any]], list[tuple[Any, ...]]],
        batch: Callable[[Sequence[Statement]], list[list[tuple[Any, ...]]]],
    ) -> None:
        self._execute = execute
        self._batch = batch

    def apply(
        self, statements: Sequence[Statement], *, wait: bool = True, keep: Keep | None = None
    ) -> Applied:
        if not wait:
            raise WouldWait("a libSQL server is answered over the network")
        if len(statements) == 1:
            return Applied([take_of(self._execute(*statements[0]))], committed=True)
        takes = [take_of(rows) for rows in self._batch(statements)]
        return Applied(takes, committed=True)
