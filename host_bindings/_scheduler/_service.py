"""The scheduler service: finds due occurrences, claims them, runs them, records them.

One pass (:meth:`Scheduler.run` makes one every ``poll``; :meth:`Scheduler.fire_due`
makes them until nothing due is left):

1. runs whose lease ended (their scheduler died mid-run) are recorded ``failed``, and
   notified as any failed run;
2. the due-scan reads active schedules with ``next_run_at <= now`` and no run in flight
   (one indexed range read), as many as there are free run slots;
3. each is claimed (:meth:`~._store.ScheduleStore.claim`): the store moves
   ``next_run_at`` past ``now`` and inserts the run in one transaction, so of several
   schedulers on one store exactly one runs the occurrence;
4. each claimed run starts at once, in its own task (:class:`~._runs.RunKeeper`).

Faults stay with their schedule. A schedule whose next occurrence cannot be computed (a
time zone this host's tz database lacks, a cadence it cannot read) is paused and the
occurrence recorded ``failed`` with the reason (:meth:`~._store.ScheduleStore.record_fault`),
and its owner is notified per its ``notification``; its owner resumes it once fixed. A
store error while claiming one schedule leaves it for the next pass; the others go on. A
claim whose answer was lost (the store failed after committing it) is looked up and run
if it was taken. A store that fails for the whole pass (the scan, the lease expiry) is
logged, and the next pass tries again; :meth:`Scheduler.run` never ends but by
cancellation.

In flight. A run slot is taken before a claim and given back when the claim does not
take, or when the run's task ends, whatever happens in between: the count of runs in
flight (:attr:`Scheduler.in_flight`) is exact, so ``max_concurrent_runs`` holds.

Missed occurrences after downtime: only the latest due occurrence runs; the earlier ones
are skipped, and the run records how many and the first and last of them. A schedule has
at most one run in flight: an occurrence that comes due while the previous run is still
running waits for it, then is treated as missed (the latest one runs).
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from datetime import datetime

import anyio
from anyio.abc import TaskGroup
from toolcage.host_bindings._backends._errors import StoreError
from toolcage.host_bindings._channel import Channel

from ._cadence import Cadence
from ._clock import Clock, SystemClock
from ._model import CadenceType, RunStatus, Schedule, ScheduleError, ScheduleStatus
from ._runs import RunKeeper, bounded, notifies
from ._settings import SchedulerSettings
from ._store import Claim, Fault, ScheduleStore, Unreadable
from ._turn import TurnRunner

logger = logging.getLogger("toolcage.scheduler")


class Scheduler:
    """Fires the due occurrences of every schedule in ``store``::

    scheduler = Scheduler(store, runner, channel=channel, settings=settings)
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
        self.clock = clock or SystemClock()
        self.settings = settings or SchedulerSettings()
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.runs = RunKeeper(
            store,
            runner,
            channel=channel,
            clock=self.clock,
            settings=self.settings,
            owner=self.owner,
        )
        self._in_flight = 0
        self._freed: anyio.Event | None = None

    @property
    def in_flight(self) -> int:
        """Runs this scheduler has claimed (or is claiming) that have not ended."""
        return self._in_flight

    async def run(self) -> None:
        """Make a pass every ``poll`` until cancelled; runs in flight are cancelled with
        it and recorded ``failed``."""
        async with anyio.create_task_group() as group:
            while True:
                now = self.clock.now()
                await self._expire(now)
                tried: set[str] = set()
                more = True
                while more and self._in_flight < self.settings.max_concurrent_runs:
                    more = (await self._pass(group, now, tried))[1]
                await self.clock.sleep_until(self.clock.now() + self.settings.poll)

    async def fire_due(self) -> list[str]:
        """Fire every occurrence due now and wait for their runs to end; the run ids.

        At most ``max_concurrent_runs`` run at once: when every slot is taken, the next
        claim waits for a run to end. Each due schedule is tried once; one that cannot be
        claimed now (its store failed) is left for a later pass, and a due-scan that fails
        ends the firing (logged) once the runs it started have ended.
        """
        now = self.clock.now()
        fired: list[str] = []
        tried: set[str] = set()
        async with anyio.create_task_group() as group:
            await self._expire(now)
            more = True
            while more:
                await self._room()
                started, more = await self._pass(group, now, tried)
                fired.extend(started)
        return fired

    async def _pass(
        self, group: TaskGroup, now: datetime, tried: set[str]
    ) -> tuple[list[str], bool]:
        """Claim and start, in ``group``, what is due at ``now`` and not in ``tried``
        (which grows), as many as there are free slots; the run ids started, and whether
        more may be due."""
        room = self.settings.max_concurrent_runs - self._in_flight
        if room <= 0:
            return [], True
        # The schedules tried already and still due are read again, and skipped.
        limit = room + len(tried)
        try:
            due = await anyio.to_thread.run_sync(self.store.due_schedules, now, limit)
        except Exception:
            logger.exception(
                "the due-scan failed; trying again in %s",
                self.settings.poll,
                extra={"event": "scheduler.scan_failed"},
            )
            return [], False
        fresh = [schedule for schedule in due if schedule.schedule_id not in tried]
        started: list[str] = []
        for schedule in fresh:
            if isinstance(schedule, Unreadable):  # paused, taking no slot
                tried.add(schedule.schedule_id)
                seen, why = schedule.next_run_at, schedule.reason
                await self._pause(schedule.schedule_id, schedule.user_id, seen, now, why)
                continue
            if room == 0:
                return started, True
            tried.add(schedule.schedule_id)
            room -= 1
            run_id = await self._take(group, schedule)
            if run_id is not None:
                started.append(run_id)
        return started, len(due) == limit

    async def _room(self) -> None:
        """Wait until a run slot is free."""
        while self._in_flight >= self.settings.max_concurrent_runs:
            if self._freed is None:
                self._freed = anyio.Event()
            await self._freed.wait()

    def _give_back(self) -> None:
        self._in_flight -= 1
        freed, self._freed = self._freed, None
        if freed is not None:
            freed.set()

    async def _expire(self, now: datetime) -> None:
        try:
            expired = await anyio.to_thread.run_sync(self.store.expire_leases, now)
        except Exception:
            logger.exception(
                "expiring leases failed; trying again in %s",
                self.settings.poll,
                extra={"event": "scheduler.scan_failed"},
            )
            return
        for run_id in expired:
            logger.warning(
                "run %s failed: its scheduler's lease expired",
                run_id,
                extra={"event": "scheduler.lease_expired", "run_id": run_id},
            )
            try:
                schedule = await anyio.to_thread.run_sync(self.store.schedule_of_run, run_id)
            except Exception:
                logger.exception(
                    "notifying run %s failed",
                    run_id,
                    extra={"event": "scheduler.notify_failed", "run_id": run_id},
                )
                continue
            if schedule is not None and notifies(schedule.notification, RunStatus.FAILED, None):
                await self.runs.notify(schedule, run_id)

    async def _take(self, group: TaskGroup, schedule: Schedule) -> str | None:
        """Claim ``schedule``'s due occurrence and start its run in ``group``; its run id,
        or ``None`` when it was not taken (lost to another scheduler, a fault, a store
        error)."""
        now = self.clock.now()
        try:
            # Counting what downtime skipped can take a while: off the event loop.
            claim = await anyio.to_thread.run_sync(self._claim_for, schedule, now)
        except Exception as exc:
            await self._fault(schedule, now, exc)
            return None
        if claim is None:
            return None
        self._in_flight += 1
        running = False
        try:
            try:
                taken = await anyio.to_thread.run_sync(self.store.claim, claim)
            except StoreError as exc:
                taken = await self._claimed_after_all(claim, exc)
            except Exception as exc:  # not the store's trouble: this claim's values
                await self._fault(schedule, now, exc)
                return None
            if taken:
                group.start_soon(self._execute, claim, schedule)
                running = True
                return claim.run_id
            return None
        finally:
            if not running:
                self._give_back()

    async def _execute(self, claim: Claim, schedule: Schedule) -> None:
        try:
            await self.runs.execute(claim, schedule)
        finally:
            self._give_back()

    async def _claimed_after_all(self, claim: Claim, exc: StoreError) -> bool:
        """Whether a claim that raised ``exc`` was taken all the same (the store committed
        it, then failed to answer): the run exists, this scheduler's and running."""
        logger.error(
            "claiming schedule %s failed (%s: %s); it is tried again at the next pass",
            claim.schedule_id,
            type(exc).__name__,
            exc,
            extra={"event": "scheduler.claim_failed", "schedule_id": claim.schedule_id},
        )
        try:
            run = await anyio.to_thread.run_sync(self.store.get_run, claim.run_id)
        except Exception:  # not knowing, its lease will run out and record it failed
            return False
        return run is not None and run.status is RunStatus.RUNNING

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

    async def _fault(self, schedule: Schedule, now: datetime, exc: Exception) -> None:
        """Pause ``schedule``, whose occurrence cannot be computed, with the reason; tell
        its owner. A store that fails here leaves it for the next pass."""
        if schedule.next_run_at is None:
            return
        why = str(exc) if isinstance(exc, ScheduleError) else f"{type(exc).__name__}: {exc}"
        fault = await self._pause(
            schedule.schedule_id, schedule.user_id, schedule.next_run_at, now, why
        )
        if fault is not None and notifies(schedule.notification, RunStatus.FAILED, None):
            await self.runs.notify(schedule, fault.run_id, fault.reason)

    async def _pause(
        self, schedule_id: str, user_id: str, seen: datetime, now: datetime, why: str
    ) -> Fault | None:
        """Pause the schedule whose occurrence ``seen`` cannot run, recording it failed with
        ``why``; the fault when it was recorded (``None`` when the schedule moved meanwhile
        or the store failed: then the next pass tries again)."""
        reason = bounded(
            f"the schedule cannot run on this host ({why}); it is paused: fix it and set"
            " its status to active"
        )
        logger.error(
            "schedule %s of user %s is paused: %s",
            schedule_id,
            user_id,
            why,
            extra={
                "event": "scheduler.schedule_failed",
                "schedule_id": schedule_id,
                "user_id": user_id,
            },
        )
        fault = Fault(
            schedule_id=schedule_id,
            seen_next_run_at=seen,
            run_id=f"run-{uuid.uuid4()}",
            owner=self.owner,
            at=now,
            reason=reason,
        )
        try:
            recorded = await anyio.to_thread.run_sync(self.store.record_fault, fault)
        except Exception:
            logger.exception(
                "recording the fault of schedule %s failed; it is tried again at the next pass",
                schedule_id,
                extra={"event": "scheduler.record_failed", "schedule_id": schedule_id},
            )
            return None
        return fault if recorded else None
