"""``ScheduledTurns``: the scheduler's :class:`~toolcage.host_bindings._scheduler.TurnRunner`
that runs each due schedule as an agent turn.

The schedule's goal is the user message of a fresh conversation (a scheduled turn has no
other context), run by :func:`~._loop.run_turn` on the runtime under the operator's
``[scheduler]`` budgets: ``max_turns`` model calls and ``max_cost`` at the ``[loop]``
prices. The system prompt asks the model to answer exactly :data:`NOTHING_TO_REPORT` when
there is nothing worth telling; such an answer does not notify a ``conditional`` schedule.

Whose turn. The turn runs as the schedule's stored principal -- the call that created it --
moved to a session of its own, ``schedule:ID`` (:meth:`~toolcage.policies.Principal.in_session`):
the same user, agent, session kind, channel and delegation chain and depth. So it gets that
agent's tools (the registry's per-agent set), vault grants and rate-limit keys, and a
schedule a depth-1 delegate made cannot delegate past ``[delegation] max_depth``.

What it still needs. Before the turn, the schedule must still hold the authority it was
created under; otherwise the run fails with a reason naming the agent and what is missing
(recorded and notified as any failed run), and no turn runs:

* its agent may still call ``schedule_create`` in this runtime (the tool it was made with);
* an agent that was an ``[agents.*]`` profile when the schedule was made must still be one:
  an id without a profile sees every tool, so a removed profile would otherwise widen it.
  Agents that never had a profile (an embedder's own ids) run as such ids always have.

Which model. A schedule whose agent has a profile runs on the profile's ``model`` when the
host gave ``models`` (the same names as ``Runtime.from_config(models=...)``; a model it did
not give fails the run, as delegation does), and on ``client`` otherwise. The profile's
``system_prompt`` comes first, then the scheduled-run instructions above, which every
scheduled turn keeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from toolcage.host_bindings._scheduler import TurnOutcome, TurnRequest
from toolcage.policies import LoopLimits

from .._host import ToolHost
from .._tool import ToolExecutionContext
from ._loop import StopReason, run_turn
from ._model_client import ModelClient
from .providers.base import UserMessage

NOTHING_TO_REPORT = "NOTHING TO REPORT"
SYSTEM_PROMPT = (
    "You are running a scheduled task on the user's behalf; the user is not present. "
    "Carry out the task with the tools you have, then answer with what the user should "
    f"know. If there is nothing worth telling them, answer exactly: {NOTHING_TO_REPORT}"
)
AUTHORITY = "schedule_create"
"""The tool a schedule is made with: its agent must still be allowed it when it runs."""


@dataclass(frozen=True, slots=True)
class Turn:
    """A scheduled turn, ready to run."""

    context: ToolExecutionContext
    """The schedule's principal in its own session, with the schedule and run ids."""
    client: ModelClient
    """The model it runs on."""
    system: str
    """Its system prompt."""


class ScheduledTurns:
    """Runs scheduled goals on ``runtime`` with ``client`` (or the profile's model among
    ``models``)::

    scheduler = Scheduler(store, ScheduledTurns(runtime, client), channel=channel)
    """

    def __init__(
        self,
        runtime: ToolHost,
        client: ModelClient,
        *,
        system: str = SYSTEM_PROMPT,
        models: Mapping[str, ModelClient] | None = None,
    ):
        self.runtime = runtime
        self.client = client
        self.system = system
        self.models = None if models is None else dict(models)

    def limits(self) -> LoopLimits:
        """The ``[loop]`` limits with the ``[scheduler]`` budgets in place of its own."""
        config = self.runtime.config
        return config.loop.model_copy(
            update={
                "max_rounds": config.scheduler.max_turns,
                "max_cost": config.scheduler.max_cost,
            }
        )

    def prepare(self, request: TurnRequest) -> Turn | str:
        """The turn ``request`` runs, or why it may not run (see the module docstring)."""
        schedule = request.schedule
        if schedule.principal is None:
            return "the schedule's stored principal cannot be read; it runs as no one"
        agent = schedule.principal.agent_id
        profile = self.runtime.config.agents.get(agent)
        if schedule.agent_profile and profile is None:
            return (
                f"agent {agent!r} created this schedule as a configured profile, and the "
                f"config no longer has it ([agents.{agent}]); the schedule does not run"
            )
        if not self.runtime.registry.is_enabled(AUTHORITY, agent):
            lacking = (
                f"no longer has {AUTHORITY} among its [agents.{agent}] tools"
                if profile is not None
                else f"cannot call {AUTHORITY} in this runtime"
            )
            return (
                f"agent {agent!r} {lacking}, the authority the schedule was created under;"
                " the schedule does not run"
            )
        client, system = self.client, self.system
        if profile is not None:
            if self.models is not None:
                found = self.models.get(profile.model)
                if found is None:
                    return (
                        f"agent {agent!r} runs on model {profile.model!r}, which the host did"
                        " not provide; the schedule does not run"
                    )
                client = found
            if profile.system_prompt:
                system = f"{profile.system_prompt}\n\n{system}"
        context = ToolExecutionContext(
            principal=schedule.principal.in_session(f"schedule:{schedule.schedule_id}"),
            metadata={"schedule_id": schedule.schedule_id, "run_id": request.run_id},
        )
        return Turn(context, client, system)

    async def __call__(self, request: TurnRequest) -> TurnOutcome:
        prepared = self.prepare(request)
        if isinstance(prepared, str):
            return TurnOutcome(output=prepared, error=prepared)
        turn = await run_turn(
            prepared.client,
            self.runtime,
            [UserMessage(request.schedule.goal)],
            context=prepared.context,
            system=prepared.system,
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
