"""The scheduler's Python API for tools: :class:`ScheduleBook`, one user's schedules.

This is what the six scheduler tools (through the ``scheduler`` host binding) call; each
method maps onto one tool and raises only :class:`~._model.ScheduleError` subclasses,
whose ``error_type`` and message go straight into the envelope::

    book = ScheduleBook(store, clock=SystemClock(), min_interval_secs=60,
                        profiles={"reviewer"})
    alice = Principal("alice", "reviewer", "chat-1", channel_id="chat-7")
    schedule = book.create(alice, goal="Summarise my inbox", cadence_type="cron",
                           cadence_value="0 9 * * 1-5", timezone="Europe/Paris")
    book.search("alice", status="active", limit=20).to_json()
    book.edit("alice", schedule.schedule_id, {"status": "paused"})
    book.runs("alice", schedule.schedule_id, limit=5)
    book.run_output("alice", run_id, offset=0, max_chars=4000)
    book.delete("alice", schedule.schedule_id)

A schedule is created for a :class:`~toolcage.policies.Principal` (the calling one, whole)
and keeps it: its owner is that principal's user, its notifications go where that
principal's messages go, and its turns run as it. Whether its agent is one of the
``profiles`` (the config's ``[agents.*]`` names) is recorded beside it. Every other method
is for one user, and nothing edits the principal: :data:`EDITABLE` does not name it. A
principal may edit or delete only the schedules of its own agent
(:class:`~._model.ScheduleForbidden` for another agent's, which its user still sees): a
schedule's goal runs with its agent's tools, so a narrower agent of the same user must not
rewrite it. The host's own tooling passes a user id and acts as the user.

Arguments arrive as the guest sent them (strings, ints, ``None``) and are validated here,
so a binding needs no checks of its own beyond JSON types. Methods are synchronous and
thread-safe (the store is); a binding calls them from the guest's worker thread.

Edits while a run is in flight: the run keeps the goal it was started with and is
recorded when it ends; the edit takes effect from the next occurrence, which is
recomputed from now when the cadence or time zone changes, or on resume. Pausing does not
stop a run in flight.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from typing import Any, TypeVar

from toolcage.policies import Principal

from ._cadence import Cadence, parse_cadence
from ._clock import Clock
from ._model import (
    CadenceType,
    Notification,
    OutputChunk,
    RunRecord,
    Schedule,
    ScheduleForbidden,
    ScheduleNotFound,
    ScheduleStatus,
    ScheduleValidationError,
    SearchPage,
)
from ._store import ScheduleFilter, ScheduleStore
from ._zones import canonical_zone

MAX_GOAL_CHARS = 8000
MAX_NAME_CHARS = 200
SEARCH_LIMIT_MAX = 50
RUNS_LIMIT_MAX = 20
OUTPUT_CHARS_MIN, OUTPUT_CHARS_MAX = 200, 8000
E = TypeVar("E", CadenceType, Notification, ScheduleStatus)

DEFAULT_ZONE = "Etc/UTC"
EDITABLE = ("name", "goal", "cadence_type", "cadence_value", "timezone", "notification", "status")


class ScheduleBook:
    """Create, find, edit and delete schedules of one store, each call for one user."""

    def __init__(
        self,
        store: ScheduleStore,
        *,
        clock: Clock,
        min_interval_secs: int = 60,
        profiles: Collection[str] = (),
    ) -> None:
        self.store = store
        self.clock = clock
        self.min_interval_secs = min_interval_secs
        self.profiles = frozenset(profiles)
        """The agent ids that are ``[agents.*]`` profiles (see :attr:`Schedule.agent_profile`)."""

    def create(
        self,
        principal: Principal,
        *,
        goal: object,
        cadence_type: object,
        cadence_value: object,
        name: object = None,
        timezone: object = None,
        notification: object = None,
    ) -> Schedule:
        """A new active schedule of ``principal``'s user that runs as ``principal`` and
        notifies the channel its messages go to."""
        goal_text = _text("goal", goal, MAX_GOAL_CHARS)
        zone = DEFAULT_ZONE if timezone is None else canonical_zone(_text("timezone", timezone, 64))
        kind = _choice("cadence_type", cadence_type, CadenceType)
        cadence = self._cadence(kind, cadence_value, zone)
        now = self.clock.now()
        schedule = Schedule(
            schedule_id=f"sched-{uuid.uuid4()}",
            user_id=principal.user_id,
            name=_default_name(goal_text) if name is None else _text("name", name, MAX_NAME_CHARS),
            goal=goal_text,
            cadence_type=kind,
            cadence_value=cadence.value,
            timezone=zone,
            notification=(
                Notification.ALWAYS
                if notification is None
                else _choice("notification", notification, Notification)
            ),
            status=ScheduleStatus.ACTIVE,
            channel_id=principal.send_channel_id,
            next_run_at=cadence.next_after(now),
            created_at=now,
            updated_at=now,
            last_run_at=None,
            principal=principal,
            agent_profile=principal.agent_id in self.profiles,
        )
        self.store.insert_schedule(schedule)
        return schedule

    def get(self, user_id: str, schedule_id: object) -> Schedule:
        """The user's schedule, or :class:`ScheduleNotFound`."""
        found = self.store.get_schedule(user_id, _text("schedule_id", schedule_id, 100))
        if found is None:
            raise ScheduleNotFound(f"no schedule {schedule_id!r}")
        return found

    def search(
        self,
        user_id: str,
        *,
        name: object = None,
        status: object = None,
        cadence_type: object = None,
        notification: object = None,
        limit: object = 20,
        offset: object = 0,
    ) -> SearchPage:
        """A page of the user's schedules matching every filter given, newest first."""
        filters = ScheduleFilter(
            name=None if name is None else _text("name", name, MAX_NAME_CHARS),
            status=None if status is None else _choice("status", status, ScheduleStatus).value,
            cadence_type=(
                None
                if cadence_type is None
                else _choice("cadence_type", cadence_type, CadenceType).value
            ),
            notification=(
                None
                if notification is None
                else _choice("notification", notification, Notification).value
            ),
        )
        size = _integer("limit", limit, 1, SEARCH_LIMIT_MAX)
        start = _integer("offset", offset, 0, None)
        rows, total = self.store.search_schedules(user_id, filters, limit=size, offset=start)
        remaining = max(0, total - start - len(rows))
        if remaining:
            hint = f"{remaining} more: call again with offset={start + len(rows)}"
        elif total == 0:
            hint = "no schedules match; loosen the filters or create one"
        else:
            hint = "this is the last page"
        return SearchPage(tuple(rows), total, remaining, hint)

    def edit(self, who: str | Principal, schedule_id: object, patch: Mapping[str, Any]) -> Schedule:
        """Apply a partial patch of :data:`EDITABLE` fields (``status``: ``active`` to resume,
        ``paused`` to pause). ``cadence_value`` alone keeps the cadence type; a new
        ``cadence_type`` needs its ``cadence_value``."""
        unknown = sorted(set(patch) - set(EDITABLE))
        if unknown:
            raise ScheduleValidationError(
                unknown[0], f"cannot be edited; editable fields: {', '.join(EDITABLE)}"
            )
        if not patch:
            raise ScheduleValidationError(None, f"nothing to change; give any of {EDITABLE}")
        current = self._changeable(who, schedule_id)
        user_id = current.user_id
        changes: dict[str, object] = {}
        if "name" in patch:
            changes["name"] = _text("name", patch["name"], MAX_NAME_CHARS)
        if "goal" in patch:
            changes["goal"] = _text("goal", patch["goal"], MAX_GOAL_CHARS)
        if "notification" in patch:
            changes["notification"] = _choice("notification", patch["notification"], Notification)
        zone = current.timezone
        if "timezone" in patch:
            zone = canonical_zone(_text("timezone", patch["timezone"], 64))
            changes["timezone"] = zone
        kind = current.cadence_type
        if "cadence_type" in patch:
            kind = _choice("cadence_type", patch["cadence_type"], CadenceType)
            if "cadence_value" not in patch and kind is not current.cadence_type:
                raise ScheduleValidationError(
                    "cadence_value", f"give the new {kind.value} cadence's value with its type"
                )
        status = current.status
        if "status" in patch:
            status = _choice("status", patch["status"], ScheduleStatus)
            if status is ScheduleStatus.COMPLETED:
                raise ScheduleValidationError("status", "set 'active' or 'paused'")
        retimed = bool({"cadence_type", "cadence_value", "timezone"} & set(patch))
        resumed = status is ScheduleStatus.ACTIVE and current.status is not ScheduleStatus.ACTIVE
        if retimed or resumed:
            value = patch.get("cadence_value", current.cadence_value)
            cadence = self._cadence(kind, value, zone)
            changes["cadence_type"] = kind
            changes["cadence_value"] = cadence.value
            changes["timezone"] = cadence.zone.key  # canonical, also for one stored before
            changes["next_run_at"] = cadence.next_after(self.clock.now())
            if changes["next_run_at"] is None:
                raise ScheduleValidationError(
                    "cadence_value", "the once time has passed; give a future time to resume"
                )
        changes["status"] = status
        changes["updated_at"] = self.clock.now()
        updated = self.store.update_schedule(user_id, current.schedule_id, changes)
        if updated is None:
            raise ScheduleNotFound(f"no schedule {schedule_id!r}")
        return updated

    def delete(self, who: str | Principal, schedule_id: object) -> None:
        """Remove the user's schedule and its runs (a run in flight finishes unrecorded)."""
        if isinstance(who, Principal):
            user_id = self._changeable(who, schedule_id, deleting=True).user_id
        else:
            user_id = who
        if not self.store.delete_schedule(user_id, _text("schedule_id", schedule_id, 100)):
            raise ScheduleNotFound(f"no schedule {schedule_id!r}")

    def _changeable(
        self, who: str | Principal, schedule_id: object, *, deleting: bool = False
    ) -> Schedule:
        """The schedule ``who`` may change: a user's own, or a principal's own agent's (one
        whose stored principal is damaged never runs, so any agent of its user deletes it)."""
        if not isinstance(who, Principal):
            return self.get(who, schedule_id)
        current = self.get(who.user_id, schedule_id)
        if current.principal is None:
            if deleting:
                return current
            raise ScheduleForbidden(
                f"schedule {current.schedule_id!r} cannot be changed: its stored principal "
                "is damaged, so it never runs; delete it and create it again"
            )
        owner = current.principal.agent_id
        if owner != who.agent_id:
            raise ScheduleForbidden(
                f"schedule {current.schedule_id!r} runs as agent {owner!r}; only that agent "
                f"may change it, not {who.agent_id!r}"
            )
        return current

    def runs(self, user_id: str, schedule_id: object, limit: object = 5) -> list[RunRecord]:
        """The schedule's latest runs, newest first (metadata only)."""
        size = _integer("limit", limit, 1, RUNS_LIMIT_MAX)
        found = self.store.list_runs(user_id, _text("schedule_id", schedule_id, 100), size)
        if found is None:
            raise ScheduleNotFound(f"no schedule {schedule_id!r}")
        return found

    def run_output(
        self, user_id: str, run_id: object, offset: object = 0, max_chars: object = 4000
    ) -> OutputChunk:
        """``max_chars`` (200-8000) characters of the run's full output from ``offset``."""
        start = _integer("offset", offset, 0, None)
        size = _integer("max_chars", max_chars, OUTPUT_CHARS_MIN, OUTPUT_CHARS_MAX)
        chunk = self.store.run_output(user_id, _text("run_id", run_id, 100), start, size)
        if chunk is None:
            raise ScheduleNotFound(f"no run {run_id!r}")
        return chunk

    def _cadence(self, kind: CadenceType, value: object, zone: str) -> Cadence:
        return parse_cadence(
            kind,
            value,
            zone,
            now=self.clock.now(),
            min_interval_secs=self.min_interval_secs,
        )


def _text(field: str, value: object, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ScheduleValidationError(field, "must be a non-empty string")
    if len(value) > limit:
        raise ScheduleValidationError(field, f"is {len(value)} characters; at most {limit}")
    return value.strip()


def _choice(field: str, value: object, kind: type[E]) -> E:
    allowed = ", ".join(repr(member.value) for member in kind)
    if not isinstance(value, str):
        raise ScheduleValidationError(field, f"must be one of {allowed}")
    try:
        return kind(value.strip().lower())
    except ValueError:
        raise ScheduleValidationError(field, f"{value!r} is not one of {allowed}") from None


def _integer(field: str, value: object, low: int, high: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScheduleValidationError(field, "must be an integer")
    if value < low or (high is not None and value > high):
        span = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ScheduleValidationError(field, f"is {value}; must be {span}")
    return value


def _default_name(goal: str) -> str:
    first = goal.splitlines()[0]
    return first if len(first) <= 60 else first[:59] + "…"
