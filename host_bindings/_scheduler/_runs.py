"""One claimed run, from its turn to its record and notification.

:class:`RunKeeper` runs the :class:`~._turn.TurnRunner` with the schedule as it was
claimed, renewing the run's lease every third of it, then records status, end, summary,
cost and output, and notifies the schedule's channel per its ``notification``:
``always``; ``conditional`` when the outcome has something to report, or the run failed;
``never``. :meth:`RunKeeper.notify` is also how a run failed by an expired lease, or by a
schedule that cannot be computed, reaches its owner.

Nothing here raises into the service: a turn that raises fails its run; a store that fails
while recording is tried up to :data:`RECORD_TRIES` times, ``poll`` apart, then left to the
run's lease (which runs out, and another pass records the run failed); a channel that
fails is logged. Cancellation (the service stopping) fails the
run with :data:`STOPPED`, recorded under a shield.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime

import anyio
from toolcage.host_bindings._channel import Channel, ChannelMessage, MessageKind

from ._clock import Clock
from ._model import Notification, RunStatus, Schedule, iso
from ._settings import SchedulerSettings
from ._store import Claim, ScheduleStore
from ._turn import TurnOutcome, TurnRequest, TurnRunner

logger = logging.getLogger("toolcage.scheduler")

SUMMARY_CHARS = 300
TRUNCATED = "\n[output truncated at {limit} characters]"
STOPPED = "the scheduler stopped before the run ended"
RECORD_TRIES = 3
"""Tries to record a run's end, ``poll`` apart, before leaving it to its lease."""


class RunKeeper:
    """Runs claimed occurrences for one scheduler (its ``owner`` holds their leases)."""

    def __init__(
        self,
        store: ScheduleStore,
        runner: TurnRunner,
        *,
        channel: Channel | None,
        clock: Clock,
        settings: SchedulerSettings,
        owner: str,
    ) -> None:
        self.store = store
        self.runner = runner
        self.channel = channel
        self.clock = clock
        self.settings = settings
        self.owner = owner

    async def execute(self, claim: Claim, schedule: Schedule) -> None:
        """Run the claimed occurrence to its end and record it; never raises but
        cancellation."""
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
        error = STOPPED
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
            except Exception:  # tried again at the next renewal, while the lease lasts
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
        try:
            status, summary, cost, output = self._ending(outcome, error)
        except Exception as exc:  # a runner that returned something else than an outcome
            error = f"the run's outcome cannot be read: {type(exc).__name__}: {exc}"
            status, summary, cost, output = RunStatus.FAILED, bounded(error), 0.0, error
            outcome = None
        ended = self.clock.now()
        recorded = None
        for attempt in range(1, RECORD_TRIES + 1):
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
                if not recorded and attempt > 1:  # the failed try may have recorded it
                    recorded = await self._ended_as(claim.run_id, status, ended)
                break
            except Exception:
                logger.exception(
                    "recording run %s failed (try %d of %d)",
                    claim.run_id,
                    attempt,
                    RECORD_TRIES,
                    extra={"event": "scheduler.record_failed", "run_id": claim.run_id},
                )
            if attempt < RECORD_TRIES:
                await self.clock.sleep_until(self.clock.now() + self.settings.poll)
        if recorded is None:  # its lease will run out, and another pass records it failed
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
        if notifies(schedule.notification, status, outcome):
            await self.notify(schedule, claim.run_id, summary)

    async def _ended_as(self, run_id: str, status: RunStatus, ended: datetime) -> bool:
        """Whether the run is recorded with ``status`` at ``ended`` (by an earlier try whose
        answer was lost), not ended otherwise (by an expired lease)."""
        run = await anyio.to_thread.run_sync(self.store.get_run, run_id)
        return run is not None and (run.status, run.ended_at) == (status, ended)

    def _ending(self, outcome: TurnOutcome | None, error: str) -> tuple[RunStatus, str, float, str]:
        """Status, summary, cost and stored output of a run that ended with ``outcome``."""
        limit = self.settings.max_output_chars
        if outcome is None:
            return RunStatus.FAILED, bounded(error), 0.0, error[:limit]
        status = RunStatus.SUCCEEDED if outcome.error is None else RunStatus.FAILED
        output = str(outcome.output)
        if len(output) > limit:
            output = output[:limit] + TRUNCATED.format(limit=limit)
        summary = bounded(str(outcome.error or outcome.summary or output))
        return status, summary, float(outcome.cost), output

    async def notify(self, schedule: Schedule, run_id: str, summary: str | None = None) -> None:
        """Send the run's record to the schedule's channel, with ``summary`` (the run's
        own by default) as its text; a failure is logged."""
        if self.channel is None:
            return
        try:
            run = await anyio.to_thread.run_sync(self.store.get_run, run_id)
            if run is None:
                return
            message = ChannelMessage(
                kind=MessageKind.SCHEDULE_RUN,
                user_id=schedule.user_id,
                channel_id=schedule.channel_id,
                text=run.summary if summary is None else summary,
                data={"schedule_id": schedule.schedule_id, "name": schedule.name, **run.to_json()},
            )
            await self.channel.send(message)
        except Exception:
            logger.exception(
                "notifying run %s failed",
                run_id,
                extra={"event": "scheduler.notify_failed", "run_id": run_id},
            )


def notifies(policy: Notification, status: RunStatus, outcome: TurnOutcome | None) -> bool:
    """Whether a run that ended with ``status`` (and ``outcome``) is sent to the channel."""
    if policy is Notification.ALWAYS:
        return True
    if policy is Notification.NEVER:
        return False
    return status is RunStatus.FAILED or (outcome is not None and outcome.report)


def bounded(summary: str) -> str:
    """``summary`` cut to :data:`SUMMARY_CHARS`."""
    return summary if len(summary) <= SUMMARY_CHARS else summary[: SUMMARY_CHARS - 1] + "…"
