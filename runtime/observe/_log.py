"""The audit log: a call observer whose writing never blocks or fails a call.

A call only appends its trace to a queue; redaction, hashing, encoding and writing happen
on the writer's own daemon thread, started with the first record. The writer is woken by
the first record after a pause and by a full batch, and collects records for
``linger_seconds`` before it writes, so a busy runtime wakes it once per batch, not per
call. What the sink has not taken yet -- queued or spooled after a failure -- is bounded
by ``max_pending``: past it, records are counted as dropped, and once the sink works again
the count is written as a ``dropped`` record of its own. A failing sink is retried every
``retry_seconds``; the runtime logs the failure on the ``toolcage.audit`` logger once per
streak of failures, and again when the sink recovers. :meth:`AuditLog.aclose` writes what
is left (one last try for a failing sink) and stops the thread, waiting at most
``close_timeout`` seconds (:data:`CLOSE_TIMEOUT`) for a sink that hangs, whose writer is
then left behind. It first waits (``close_grace``) for the calls still running, which the
runtime's close has stopped; a call that ends later (a host tool that ran on) is not
recorded, which is logged once.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
from toolcage.policies import Redactor

from .._observe import CallObserver, CallTrace, PolicyDecision
from ._records import approval_record, call_record, dropped_record
from ._sinks import AuditSink, PartialWrite

logger = logging.getLogger("toolcage.audit")

BATCH = 256
"""Records handed to the sink at once."""

CLOSE_TIMEOUT = 5.0
"""Seconds closing waits for the writer to hand what is left to the sink. A sink that
hangs longer is left behind: the writer is a daemon thread, so it holds up neither the
close nor the interpreter's exit, and the records it still holds are lost (logged as
``audit.close_timed_out``)."""

CLOSE_GRACE = 2.0
"""Seconds closing waits for the calls still running to end, so that their records are
written too."""

_Item = tuple[CallTrace, PolicyDecision | None, float]
"""A finished call (no decision), or an approval decision and when it was made."""


class AuditLog(CallObserver):
    """Writes one record per call and per approval decision to ``sink``.

    ``clock`` (monotonic seconds) paces the retries of a failing sink.
    """

    def __init__(
        self,
        sink: AuditSink,
        redactor: Redactor,
        *,
        max_value_chars: int = 2048,
        max_pending: int = 10_000,
        retry_seconds: float = 1.0,
        close_timeout: float = CLOSE_TIMEOUT,
        close_grace: float = CLOSE_GRACE,
        linger_seconds: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sink = sink
        self.redactor = redactor
        """The runtime's redactor, which every record passes through."""
        self.max_value_chars = max_value_chars
        """A string longer than this is cut in a record (after redaction)."""
        self.max_pending = max_pending
        self.retry_seconds = retry_seconds
        self.close_timeout = close_timeout
        """How long closing waits for the writer (:data:`CLOSE_TIMEOUT`)."""
        self.close_grace = close_grace
        """How long closing waits for the calls still running to end (the runtime's close
        has stopped its guests and commands; a host tool may run on)."""
        self.linger_seconds = linger_seconds
        """How long the writer collects records after the first one before it writes."""
        self._clock = clock
        self._queue: collections.deque[_Item] = collections.deque()
        self._spool: list[dict[str, Any]] = []
        self._held = 0
        """Records in the spool (read by callers without the lock: a bound, not a count)."""
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._dropped = 0
        self._dropping = False
        self._failing = False
        self._stopping = False
        self._warned_closed = False
        self._running = 0
        """Calls begun and not ended: closing waits for them (see :meth:`aclose`)."""
        self._idle: anyio.Event | None = None
        self._thread: threading.Thread | None = None

    # The observer side: runs inside calls, on the event loop's thread.

    def call_started(self, trace: CallTrace) -> None:
        self._running += 1

    def approval_decided(self, trace: CallTrace, decision: PolicyDecision) -> None:
        self._put((trace, decision, time.time()))

    def call_ended(self, trace: CallTrace) -> None:
        self._running -= 1
        self._put((trace, None, 0.0))
        if self._running == 0 and self._idle is not None:
            self._idle.set()

    def _put(self, item: _Item) -> None:
        if self._stopping:
            if not self._warned_closed:
                self._warned_closed = True
                logger.warning(
                    "audit log: closed; calls made after it closed are not recorded",
                    extra={"event": "audit.closed", "tool": item[0].call.name},
                )
            return
        if len(self._queue) + self._held >= self.max_pending:
            self._drop()
            return
        queue = self._queue
        queue.append(item)
        if self._thread is None:
            self._start()
        # The writer is woken by the first record after a pause and by a full batch; in
        # between it collects (see _run), so a busy runtime does not wake it for each call.
        if (len(queue) == 1 or len(queue) >= BATCH) and not self._wake.is_set():
            self._wake.set()

    def _drop(self) -> None:
        with self._lock:
            self._dropped += 1
            first = not self._dropping
            self._dropping = True
        if first:
            logger.error(
                "audit log: %d records wait for the sink; further records are dropped "
                "and counted until it takes them",
                self.max_pending,
                extra={"event": "audit.dropping", "max_pending": self.max_pending},
            )

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="toolcage-audit", daemon=True)
        self._thread.start()

    # The writer side: its own thread.

    def _run(self) -> None:
        retry_at: float | None = None
        """While the sink fails: when it is tried next."""
        while True:
            if retry_at is None:
                if not self._queue:
                    self._wake.wait()
                    self._wake.clear()
                if not self._stopping and len(self._queue) < BATCH:
                    self._wake.wait(self.linger_seconds)  # more records may come along
            else:
                left = retry_at - self._clock()
                if left > 0:
                    self._wake.wait(left)
            self._wake.clear()
            stopping = self._stopping
            self._take()
            if retry_at is not None and not stopping and self._clock() < retry_at:
                continue  # woken by a new record; the next try of the sink is not due
            if self._flush():
                if retry_at is not None:
                    logger.warning(
                        "audit log: the sink works again; the held records are written",
                        extra={"event": "audit.sink_recovered"},
                    )
                retry_at = None
            else:
                retry_at = self._clock() + self.retry_seconds
            if stopping and (retry_at is not None or not self._queue):
                left_over = len(self._spool) + len(self._queue)
                if left_over:
                    logger.error(
                        "audit log: closed with %d records the sink did not take",
                        left_over,
                        extra={"event": "audit.records_lost", "count": left_over},
                    )
                return

    def _take(self) -> None:
        """Build the records of (at most a batch of) what is queued and spool them."""
        for _ in range(min(BATCH, len(self._queue))):
            self._held += 1  # before the pop: callers never see a record counted nowhere
            trace, decision, at = self._queue.popleft()
            try:
                if decision is None:
                    record = call_record(trace, self.redactor, self.max_value_chars)
                else:
                    record = approval_record(
                        trace, decision, at, self.redactor, self.max_value_chars
                    )
            except Exception:
                logger.exception(
                    "audit log: cannot build the record of %s",
                    trace.call.name,
                    extra={
                        "event": "audit.record_failed",
                        "tool": trace.call.name,
                        "call_id": trace.call.id,
                    },
                )
                self._held -= 1
                continue
            self._spool.append(record)
            # Hand the interpreter back between records: a call waiting for it should not
            # wait out a whole batch (the default switch interval is 5 ms).
            time.sleep(0)
        self._held = len(self._spool)

    def _flush(self) -> bool:
        """Write the spool, then the count of dropped records; False if the sink failed."""
        while self._spool:
            if not self._write(self._spool[:BATCH], spooled=True):
                return False
        with self._lock:
            dropped, self._dropped = self._dropped, 0
            self._dropping = False
        if dropped and not self._write([dropped_record(dropped, time.time())], spooled=False):
            with self._lock:
                self._dropped += dropped
            return False
        self._failing = False
        return True

    def _write(self, batch: list[dict[str, Any]], *, spooled: bool) -> bool:
        """Hand ``batch`` to the sink; what it took leaves the spool (when it came from it)."""
        try:
            self.sink.write(batch)
            written = len(batch)
        except PartialWrite as exc:
            self._failed(exc.cause)
            written = exc.written
        except Exception as exc:
            self._failed(exc)
            written = 0
        if spooled:
            del self._spool[:written]
            self._held = len(self._spool)
        return written == len(batch)

    def _failed(self, exc: Exception) -> None:
        if not self._failing:
            self._failing = True
            error = f"{type(exc).__name__}: {exc}"
            logger.error(
                "audit log: the sink failed (%s); records are held and retried every %g s",
                error,
                self.retry_seconds,
                extra={
                    "event": "audit.sink_failed",
                    "error": error,
                    "retry_seconds": self.retry_seconds,
                },
            )

    async def aclose(self) -> None:
        """Wait (at most ``close_grace``) for the calls still running to end, then write
        what is left and stop the writer (waiting at most ``close_timeout`` for it)."""
        if self._running > 0 and not self._stopping:
            self._idle = anyio.Event()
            with anyio.move_on_after(self.close_grace):
                await self._idle.wait()
        self._stopping = True
        thread = self._thread
        if thread is None:
            return
        self._wake.set()
        await anyio.to_thread.run_sync(thread.join, self.close_timeout, abandon_on_cancel=True)
        if thread.is_alive():
            logger.error(
                "audit log: the sink did not finish within %g s; the writer is left behind",
                self.close_timeout,
                extra={"event": "audit.close_timed_out", "timeout": self.close_timeout},
            )
