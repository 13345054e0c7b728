"""The scheduler service: finds due occurrences, claims them, runs them, records them.

One pass (:meth:`Scheduler.fire_due`, which :meth:`Scheduler.run` repeats):

1. runs whose lease ended (their scheduler died mid-run) are recorded ``failed``;
2. the due-scan reads active schedules with ``next_run_at <= now`` and no run in flight
   (one indexed range read);
3. each is claimed (:meth:`~._store.ScheduleStore.claim`): the store moves
   ``next_run_at`` past ``now`` and inserts the run in one transaction, so of several
   schedulers on one store exactly one runs the occurrence;
4. the claimed run calls the :class:`TurnRunner` with the schedule as it was claimed,
   renewing its lease while it runs, and records status, end, summary, cost and output;
5. the schedule's channel is notified per ``notification``: ``always``; ``conditional``
   when the outcome has something to report, or the run failed; ``never``. A run failed
   by step 1 is notified the same way, by the scheduler that found its lease expired.

Missed occurrences after downtime: only the latest due occurrence runs; the earlier ones
are skipped, and the run records how many and the first and last of them.

A schedule has at most one run in flight: an occurrence that comes due while the previous
run is still running waits for it, then is treated as missed (the latest one runs).
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

import anyio
from toolcage.host_bindings._channel import Channel, ChannelMessage, MessageKind
from toolcage.host_bindings._store import StoreError

from ._cadence import Cadence
from ._clock import Clock, SystemClock
from ._model import (
    CadenceType,
    Notification,
    RunRecord,
    RunStatus,
    Schedule,
    ScheduleStatus,
    iso,
)
from ._store import Claim, ScheduleStore

logger = logging.getLogger("toolcage.scheduler")

SUMMARY_CHARS = 300
TRUNCATED = "\n[output truncated at {limit} characters]"


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """What a :class:`TurnRunner` is asked to run."""

    schedule: Schedule
    """The schedule as it was when the occurrence was claimed (its goal is the prompt,
    its ``principal`` the identity the turn runs as)."""
    run_id: str
    occurrence_at: datetime
    """The occurrence being run."""


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """What a run produced."""

    output: str
    """The full output (the model's answer); stored, paged by ``schedule_run_output``."""
    summary: str | None = None
    """A short summary; ``None``: the start of ``output``."""
    cost: float = 0.0
    """What the turn cost."""
    report: bool = True
    """Whether there is something to tell the user (for ``conditional`` notification)."""
    error: str | None = None
    """Why the turn did not complete (a budget ran out, say): the run is recorded
    ``failed`` with this summary, its output kept."""


class TurnRunner(Protocol):
    """Runs one scheduled turn. Raising records the run ``failed`` with the error."""

    def __call__(self, request: TurnRequest, /) -> Awaitable[TurnOutcome]: ...


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    """How a scheduler runs (operator config)."""

    lease: timedelta = timedelta(minutes=5)
    """How long a claimed run stays this scheduler's without renewal; renewed every third."""
    poll: timedelta = timedelta(seconds=1)
    """How often the due-scan runs."""
    max_concurrent_runs: int = 4
    """Runs in flight at once in this scheduler."""
    max_output_chars: int = 200_000
    """A run's stored output is cut to this many characters."""


class Scheduler:
    """Fires the due occurrences of every schedule in ``store``::

    scheduler = Scheduler(store, runner, channel=channel)
    async with anyio.create_task_group() as tg:
        tg.start_soon(scheduler.run)   # cancel the group to stop it
    """

    def __init__(
        self,
        store: ScheduleStore,
        runner: TurnRunner,
        *,
        channel: Channel | None = None,
        clock: Clock | None = None,
        settings: SchedulerSettings | None = None,
        owner: str | None = None,
    ) -> None:
        self.store = store
        self.runner = runner
        self.channel = channel
        self.clock = clock or SystemClock()
        self.settings = settings or SchedulerSettings()
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._in_flight = 0

    async def run(self) -> None:
        """Scan and fire every ``poll`` until cancelled; runs in flight are cancelled with
        it and recorded ``failed``. A store that fails (busy, unreachable) is logged and
        tried again at the next poll."""
        async with anyio.create_task_group() as group:
            while True:
                try:
                    claimed = await self._claim_due()
                except StoreError:
                    logger.exception(
                        "the due-scan failed; trying again in %s",
                        self.settings.poll,
                        extra={"event": "scheduler.scan_failed"},
                    )
                    claimed = []
                for claim, schedule in claimed:
                    group.start_soon(self._execute, claim, schedule)
                await self.clock.sleep_until(self.clock.now() + self.settings.poll)

    async def fire_due(self) -> list[str]:
        """One pass: claim every due occurrence and run them to their end; the run ids."""
        claimed = await self._claim_due()
        async with anyio.create_task_group() as group:
            for claim, schedule in claimed:
                group.start_soon(self._execute, claim, schedule)
        return [claim.run_id for claim, _ in claimed]

    async def _claim_due(self) -> list[tuple[Claim, Schedule]]:
        now = self.clock.now()
        for run_id in await anyio.to_thread.run_sync(self.store.expire_leases, now):
            logger.warning(
                "run %s failed: its scheduler's lease expired",
                run_id,
                extra={"event": "scheduler.lease_expired", "run_id": run_id},
            )
            await self._notify_expired(run_id)
        room = self.settings.max_concurrent_runs - self._in_flight
        if room <= 0:
            return []
        due = await anyio.to_thread.run_sync(self.store.due_schedules, now, room)
        claimed: list[tuple[Claim, Schedule]] = []
        for schedule in due:
            # Counting what downtime skipped can take a while: off the event loop.
            claim = await anyio.to_thread.run_sync(self._claim_for, schedule, now)
            if claim is not None and await anyio.to_thread.run_sync(self.store.claim, claim):
                self._in_flight += 1
                claimed.append((claim, schedule))
        return claimed

    def _claim_for(self, schedule: Schedule, now: datetime) -> Claim | None:
        seen = schedule.next_run_at
        if seen is None:
            return None
        cadence = Cadence.stored(schedule.cadence_type, schedule.cadence_value, schedule.timezone)
        caught = cadence.catch_up(seen, now)
        following = cadence.next_after(caught.occurrence)
        if following is not None and following <= now:  # a stored next run off the cadence
            following = cadence.next_after(now)
        done = following is None or schedule.cadence_type is CadenceType.ONCE
        return Claim(
            schedule_id=schedule.schedule_id,
            seen_next_run_at=seen,
            occurrence_at=caught.occurrence,
            next_run_at=None if done else following,
            next_status=ScheduleStatus.COMPLETED if done else ScheduleStatus.ACTIVE,
            run_id=f"run-{uuid.uuid4()}",
            owner=self.owner,
            started_at=now,
            lease_until=now + self.settings.lease,
            skipped=caught.skipped,
            skipped_first=caught.first_skipped,
            skipped_last=caught.last_skipped,
        )

    async def _execute(self, claim: Claim, schedule: Schedule) -> None:
        agent = None if schedule.principal is None else schedule.principal.agent_id
        logger.info(
            "firing schedule %s (user %s, agent %s) run %s for %s%s",
            schedule.schedule_id,
            schedule.user_id,
            agent,
            claim.run_id,
            iso(claim.occurrence_at),
            f", skipping {claim.skipped} missed" if claim.skipped else "",
            extra={
                "event": "scheduler.run_started",
                "schedule_id": schedule.schedule_id,
                "user_id": schedule.user_id,
                "agent_id": agent,
                "run_id": claim.run_id,
                "skipped": claim.skipped,
            },
        )
        request = TurnRequest(
            replace(schedule, status=claim.next_status), claim.run_id, claim.occurrence_at
        )
        outcome: TurnOutcome | None = None
        error = "the scheduler stopped before the run ended"
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._keep_lease, claim.run_id, group.cancel_scope)
                try:
                    outcome = await self.runner(request)
                except Exception as exc:
                    error = f"the run failed: {type(exc).__name__}: {exc}"
                group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                self._in_flight -= 1
                await self._record(claim, schedule, outcome, error)

    async def _keep_lease(self, run_id: str, scope: anyio.CancelScope) -> None:
        every = self.settings.lease / 3
        while True:
            await self.clock.sleep_until(self.clock.now() + every)
            lease_until = self.clock.now() + self.settings.lease
            try:
                renewed = await anyio.to_thread.run_sync(
                    self.store.renew, run_id, self.owner, lease_until
                )
            except StoreError:  # tried again at the next renewal, while the lease lasts
                logger.exception(
                    "renewing the lease of run %s failed",
                    run_id,
                    extra={"event": "scheduler.lease_renewal_failed", "run_id": run_id},
                )
                continue
            if not renewed:
                logger.warning(
                    "run %s lost its lease; stopping it",
                    run_id,
                    extra={"event": "scheduler.lease_lost", "run_id": run_id},
                )
                scope.cancel()
                return

    async def _record(
        self, claim: Claim, schedule: Schedule, outcome: TurnOutcome | None, error: str
    ) -> None:
        limit = self.settings.max_output_chars
        if outcome is None:
            status, output, summary, cost = RunStatus.FAILED, error, error, 0.0
        else:
            status = RunStatus.SUCCEEDED if outcome.error is None else RunStatus.FAILED
            cost, output = outcome.cost, outcome.output
            if len(output) > limit:
                output = output[:limit] + TRUNCATED.format(limit=limit)
            summary = outcome.error or outcome.summary or output
        summary = summary if len(summary) <= SUMMARY_CHARS else summary[: SUMMARY_CHARS - 1] + "…"
        ended = self.clock.now()
        try:
            recorded = await anyio.to_thread.run_sync(
                lambda: self.store.finish_run(
                    claim.run_id,
                    self.owner,
                    status=status,
                    ended_at=ended,
                    summary=summary,
                    cost=cost,
                    output=output,
                )
            )
        except StoreError:  # its lease will run out, and another pass records it failed
            logger.exception(
                "recording run %s failed",
                claim.run_id,
                extra={"event": "scheduler.record_failed", "run_id": claim.run_id},
            )
            return
        logger.info(
            "run %s of schedule %s %s: %s",
            claim.run_id,
            schedule.schedule_id,
            status,
            summary,
            extra={
                "event": "scheduler.run_ended",
                "schedule_id": schedule.schedule_id,
                "run_id": claim.run_id,
                "status": str(status),
            },
        )
        if not recorded:
            logger.warning(
                "run %s was no longer this scheduler's; its end is not recorded",
                claim.run_id,
                extra={"event": "scheduler.run_lost", "run_id": claim.run_id},
            )
            return
        if _notifies(schedule.notification, status, outcome):
            run = await anyio.to_thread.run_sync(self.store.get_run, claim.run_id)
            await self._notify(schedule, run, summary)

    async def _notify_expired(self, run_id: str) -> None:
        schedule = await anyio.to_thread.run_sync(self.store.schedule_of_run, run_id)
        if schedule is None or not _notifies(schedule.notification, RunStatus.FAILED, None):
            return
        run = await anyio.to_thread.run_sync(self.store.get_run, run_id)
        if run is not None:
            await self._notify(schedule, run, run.summary)

    async def _notify(self, schedule: Schedule, run: RunRecord | None, summary: str) -> None:
        if self.channel is None or run is None:
            return
        message = ChannelMessage(
            kind=MessageKind.SCHEDULE_RUN,
            user_id=schedule.user_id,
            channel_id=schedule.channel_id,
            text=summary,
            data={"schedule_id": schedule.schedule_id, "name": schedule.name, **run.to_json()},
        )
        try:
            await self.channel.send(message)
        except Exception:
            logger.exception(
                "notifying run %s failed",
                run.run_id,
                extra={"event": "scheduler.notify_failed", "run_id": run.run_id},
            )


def _notifies(policy: Notification, status: RunStatus, outcome: TurnOutcome | None) -> bool:
    if policy is Notification.ALWAYS:
        return True
    if policy is Notification.NEVER:
        return False
    return status is RunStatus.FAILED or (outcome is not None and outcome.report)
