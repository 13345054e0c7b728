"""Schedules: goals an agent runs later, on a cadence, per user.

* :class:`ScheduleBook` (:mod:`._api`) -- what the scheduler tools call: create, search,
  edit, delete, runs, run output, one user at a time, typed errors for the envelope;
* :class:`Scheduler` (:mod:`._service`) -- the service that fires due occurrences
  through a :class:`TurnRunner` (:mod:`._turn`), runs each (:mod:`._runs`) and notifies a
  :class:`~toolcage.host_bindings._channel.Channel`, as :class:`SchedulerSettings` say;
* :class:`ScheduleStore` (:mod:`._store`) and :func:`open_schedule_store` -- where
  schedules and runs are kept (the state store's database);
* :mod:`._cadence` -- cron, once and interval cadences across DST changes (:mod:`._cron`,
  :mod:`._forms`, :mod:`._zones`);
* :class:`Clock`, :class:`SystemClock`, :class:`ManualClock` -- time as an argument.
"""

from toolcage.policies._public import publish

from ._api import ScheduleBook
from ._cadence import Cadence, parse_cadence
from ._clock import Clock, ManualClock, SystemClock
from ._model import (
    CadenceType,
    Notification,
    OutputChunk,
    RunRecord,
    RunStatus,
    Schedule,
    ScheduleError,
    ScheduleNotFound,
    ScheduleStatus,
    ScheduleValidationError,
    SearchPage,
)
from ._open import open_schedule_store
from ._service import Scheduler
from ._settings import SchedulerSettings
from ._store import Claim, Fault, ScheduleFilter, ScheduleStore
from ._turn import TurnOutcome, TurnRequest, TurnRunner
from ._zones import canonical_zone, parse_zone

__all__ = [
    "Cadence",
    "CadenceType",
    "Claim",
    "Clock",
    "Fault",
    "ManualClock",
    "Notification",
    "OutputChunk",
    "RunRecord",
    "RunStatus",
    "Schedule",
    "ScheduleBook",
    "ScheduleError",
    "ScheduleFilter",
    "ScheduleNotFound",
    "ScheduleStatus",
    "ScheduleStore",
    "ScheduleValidationError",
    "Scheduler",
    "SchedulerSettings",
    "SearchPage",
    "SystemClock",
    "TurnOutcome",
    "TurnRequest",
    "TurnRunner",
    "canonical_zone",
    "open_schedule_store",
    "parse_cadence",
    "parse_zone",
]

publish(globals(), __all__)
del publish
