"""``ScheduledTurns``: the scheduler's :class:`~toolcage.host_bindings._scheduler.TurnRunner`
that runs each due schedule as an agent turn.

The schedule's goal is the user message of a fresh conversation (a scheduled turn has no
other context), run by :func:`~._loop.run_turn` on the runtime, in the identity of the
schedule's owner (``user_id``) and channel, under the operator's ``[scheduler]`` budgets:
``max_turns`` model calls and ``max_cost`` at the ``[loop]`` prices. The system prompt asks
the model to answer exactly :data:`NOTHING_TO_REPORT` when there is nothing worth telling;
such an answer does not notify a ``conditional`` schedule.
"""

from __future__ import annotations

from toolcage.host_bindings._scheduler import TurnOutcome, TurnRequest
from toolcage.policies import LoopLimits

from ._loop import StopReason, run_turn
from ._model_client import ModelClient
from ._runtime import Runtime
from ._tool import ToolExecutionContext
from .providers.base import UserMessage

NOTHING_TO_REPORT = "NOTHING TO REPORT"
SYSTEM_PROMPT = (
    "You are running a scheduled task on the user's behalf; the user is not present. "
    "Carry out the task with the tools you have, then answer with what the user should "
    f"know. If there is nothing worth telling them, answer exactly: {NOTHING_TO_REPORT}"
)


class ScheduledTurns:
    """Runs scheduled goals on ``runtime`` with ``client``::

    scheduler = Scheduler(store, ScheduledTurns(runtime, client), channel=channel)
    """

    def __init__(self, runtime: Runtime, client: ModelClient, *, system: str = SYSTEM_PROMPT):
        self.runtime = runtime
        self.client = client
        self.system = system

    def limits(self) -> LoopLimits:
        """The ``[loop]`` limits with the ``[scheduler]`` budgets in place of its own."""
        config = self.runtime.config
        return config.loop.model_copy(
            update={
                "max_rounds": config.scheduler.max_turns,
                "max_cost": config.scheduler.max_cost,
            }
        )

    async def __call__(self, request: TurnRequest) -> TurnOutcome:
        schedule = request.schedule
        context = ToolExecutionContext(
            user_id=schedule.user_id,
            session_id=f"schedule:{schedule.schedule_id}",
            channel_id=schedule.channel_id,
            metadata={"schedule_id": schedule.schedule_id, "run_id": request.run_id},
        )
        turn = await run_turn(
            self.client,
            self.runtime,
            [UserMessage(schedule.goal)],
            context=context,
            system=self.system,
            limits=self.limits(),
        )
        text = turn.text.strip()
        error = None if turn.stop is StopReason.COMPLETED else f"the turn stopped: {turn.stop}"
        if turn.error is not None:
            error = f"{error} ({turn.error})"
        return TurnOutcome(
            output=text,
            cost=turn.cost,
            report=text.upper() != NOTHING_TO_REPORT,
            error=error,
        )
