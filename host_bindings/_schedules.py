"""The ``scheduler`` binding: the call's user's schedules, created, found, edited, deleted,
and their runs read.

Every request reaches only the schedules of the call's ``user_id`` (from its
:class:`CallState`, never from the guest), so another user's schedule or run is an unknown
id. A schedule created in a call stores the call's whole principal (its agent, session
kind, channel and delegation chain and depth): its runs are that principal's turns, and
its notifications go back to the channel the request's messages go to. No request names
or edits a principal. Requests are the tools' arguments::

    create      {"goal", "cadence_type", "cadence_value", "name"?, "timezone"?, "notification"?}
    search      {"name"?, "status"?, "cadence_type"?, "notification"?, "limit"?, "offset"?}
    edit        {"schedule_id", any of "name", "goal", "cadence_type", "cadence_value",
                 "timezone", "notification", "status"}
    delete      {"schedule_id"}
    runs        {"schedule_id", "limit"?}
    run_output  {"run_id", "offset"?, "max_chars"?}

Each result is ``{"ok": true, "text": JSON}`` with the tool's output, or ``{"ok": false,
...}``: ``validation_error`` with a message a model can act on, ``not_found`` for an
unknown (or another user's) id, ``execution_error`` when the store failed. The validation
itself (cadences, time zones, limits) is :class:`~._scheduler.ScheduleBook`'s; the budgets
of the runs are operator config, never part of a request.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import wasmtime
from toolcage.policies import ToolcageConfig

from . import _schedule_shown as shown
from ._abi import failed, module_name
from ._backends import _waits as waits
from ._base import CallState
from ._fit import MARGIN, fit_texts, json_bytes
from ._results import JsonHandler, define_json_calls
from ._scheduler._api import EDITABLE, ScheduleBook
from ._scheduler._clock import Clock, SystemClock
from ._scheduler._model import OutputChunk, ScheduleError, ScheduleValidationError
from ._scheduler._open import open_schedule_store
from ._scheduler._store import ScheduleStore
from ._store import StoreError, StoreTimeout, StoreUnavailable
from ._store._open import auth_token

BookOpener = Callable[[], ScheduleBook]
"""The runtime's schedule book, its store opened on first use."""


Handler = Callable[[CallState, dict[str, Any]], dict[str, Any]]
"""Answers one request with the tool's output, a JSON object."""
Presenter = Callable[[dict[str, Any]], dict[str, Any]]
"""The tool's whole answer (:func:`~._results.presented`) from its output (see
:mod:`._schedule_shown`)."""


def _answering(handler: Handler, present: Presenter) -> JsonHandler:
    """``handler``, its output presented by ``present``, with the store's waits bounded by
    the call's deadline, and the scheduler's refusals, a deadline that came while the store
    waited (``timeout``, nothing changed) and the store's failures as error results."""

    @functools.wraps(handler)
    def run(state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        try:
            with waits.until(state.deadline, state.landing.landed):
                return present(handler(state, request))
        except ScheduleValidationError as exc:
            return failed(exc.error_type, str(exc), exc.field)
        except ScheduleError as exc:
            return failed(exc.error_type, str(exc))
        except StoreTimeout as exc:
            return failed("timeout", str(exc))
        except StoreError as exc:
            return failed("execution_error", str(exc))

    return run


class SchedulerBinding:
    """Capability ``scheduler``: ``toolcage_scheduler_v1.create``/``search``/``edit``/
    ``delete``/``runs``/``run_output``."""

    name = "scheduler"

    def __init__(self, book: BookOpener) -> None:
        self._book = book

    def calls(self) -> dict[str, JsonHandler]:
        """The calls this binding answers, by import name."""
        return {
            "create": _answering(self.create, shown.created),
            "search": _answering(self.search, shown.found),
            "edit": _answering(self.edit, shown.edited),
            "delete": _answering(self.delete, shown.deleted),
            "runs": _answering(self.runs, shown.runs),
            "run_output": _answering(self.run_output, shown.run_output),
        }

    def define(self, linker: wasmtime.Linker) -> None:
        define_json_calls(linker, module_name(self.name), self.calls())

    def create(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """A new schedule that runs as the call's principal and notifies its channel."""
        schedule = self._book().create(
            state.principal,
            goal=request.get("goal"),
            cadence_type=request.get("cadence_type"),
            cadence_value=request.get("cadence_value"),
            name=request.get("name"),
            timezone=request.get("timezone"),
            notification=request.get("notification"),
        )
        shown = schedule.to_json()
        return {
            key: shown[key]
            for key in ("schedule_id", "name", "next_run_at", "status", "timezone", "notification")
        }

    def search(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """A page of the call's user's schedules."""
        page = self._book().search(
            state.principal.user_id,
            name=request.get("name"),
            status=request.get("status"),
            cadence_type=request.get("cadence_type"),
            notification=request.get("notification"),
            limit=request.get("limit", 20),
            offset=request.get("offset", 0),
        )
        return _fit_page(page.to_json(), int(request.get("offset", 0)), state.reply_bytes)

    def edit(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """Apply the request's fields to a schedule of the call's user and agent."""
        patch = {key: request[key] for key in EDITABLE if key in request}
        schedule = self._book().edit(state.principal, request.get("schedule_id"), patch)
        return schedule.to_json()

    def delete(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """Delete a schedule of the call's user and agent, and its runs."""
        schedule_id = request.get("schedule_id")
        self._book().delete(state.principal, schedule_id)
        return {"schedule_id": schedule_id, "deleted": True}

    def runs(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """The latest runs of a schedule of the call's user, metadata only."""
        schedule_id = request.get("schedule_id")
        found = self._book().runs(state.principal.user_id, schedule_id, request.get("limit", 5))
        return {"schedule_id": schedule_id, "runs": [run.to_json() for run in found]}

    def run_output(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """A chunk of the full output of a run of the call's user."""
        chunk = self._book().run_output(
            state.principal.user_id,
            request.get("run_id"),
            request.get("offset", 0),
            request.get("max_chars", 4000),
        )
        return _fit_chunk(chunk, state.reply_bytes)


def _fit_page(page: dict[str, Any], offset: int, reply_bytes: int) -> dict[str, Any]:
    """``page`` within ``reply_bytes`` (see :mod:`._fit`): long goals cut evenly (each cut
    one with ``full_chars``), and when that is not enough the last schedules left to the
    next page, the hint saying so."""
    budget = reply_bytes - MARGIN
    if json_bytes(page) <= budget:
        return page
    entries: list[dict[str, Any]] = page["schedules"]
    cut, dropped = fit_texts(entries, "goal", budget - json_bytes({**page, "schedules": []}))
    if dropped:
        page["remaining"] += dropped
        page["hint"] = f"{page['remaining']} more: call again with offset={offset + len(entries)}"
    if cut:
        page["hint"] += (
            f"; {cut} long goals were cut to fit the output limit (full_chars is each one's"
            " whole length)"
        )
    return page


def _fit_chunk(chunk: OutputChunk, reply_bytes: int) -> dict[str, Any]:
    """``chunk`` within ``reply_bytes``: its text shortened to what fits (the offset to
    read on from follows, in ``remaining`` and a hint) when its characters are wide."""
    budget = reply_bytes - MARGIN
    whole = chunk.to_json()
    if json_bytes(whole) <= budget:
        return whole
    low, high = 0, len(chunk.text)  # the longest prefix that fits: low fits, high+1 not
    while low < high:
        middle = (low + high + 1) // 2
        if json_bytes({**whole, "text": chunk.text[:middle]}) <= budget:
            low = middle
        else:
            high = middle - 1
    shown = replace(chunk, text=chunk.text[:low], remaining=chunk.remaining + len(chunk.text) - low)
    fitted = shown.to_json()
    fitted["hint"] = (
        f"cut to fit the output limit: read on with offset={chunk.offset + low}"
        " (a smaller max_chars returns whole chunks)"
    )
    return fitted


class ScheduleBooks:
    """The runtime's one :class:`ScheduleBook`, its store opened on first use (so building
    a runtime touches no file) and closed with :meth:`close`; ``on_open`` is told when it
    was opened, so its owner can close it.

    >>> books = ScheduleBooks.from_config(config)  # doctest: +SKIP
    >>> books().search("ada").total   # the first use opens the store
    >>> books.close()
    """

    def __init__(
        self,
        open_store: Callable[[], ScheduleStore],
        *,
        min_interval_secs: int,
        clock: Clock | None = None,
        profiles: frozenset[str] = frozenset(),
        on_open: Callable[[], None] = lambda: None,
    ) -> None:
        self._open_store = open_store
        self._min_interval_secs = min_interval_secs
        self._profiles = profiles
        self._clock = SystemClock() if clock is None else clock
        self._on_open = on_open
        self._lock = threading.Lock()
        self._book: ScheduleBook | None = None
        self._closed = False

    @classmethod
    def from_config(
        cls, config: ToolcageConfig, *, on_open: Callable[[], None] = lambda: None
    ) -> ScheduleBooks:
        """The books in the ``[state]`` database (with its token), under ``[scheduler]``,
        knowing the ``[agents.*]`` profiles."""
        url = config.state.store_url(config.base_dir)

        def open_store() -> ScheduleStore:
            token = auth_token(config.state, url)
            return open_schedule_store(url, base_dir=config.base_dir, auth_token=token)

        return cls(
            open_store,
            min_interval_secs=config.scheduler.min_interval_secs,
            profiles=frozenset(config.agents),
            on_open=on_open,
        )

    def __call__(self) -> ScheduleBook:
        book = self._book
        if book is not None:
            return book
        with self._lock:
            if self._closed:
                raise StoreUnavailable("schedules", "the runtime is closed")
            if self._book is None:
                self._book = ScheduleBook(
                    self._open_store(),
                    clock=self._clock,
                    min_interval_secs=self._min_interval_secs,
                    profiles=self._profiles,
                )
                self._on_open()
            return self._book

    def close(self) -> None:
        """Close the store (idempotent); later calls find it closed."""
        with self._lock:
            self._closed = True
            book, self._book = self._book, None
        if book is not None:
            book.store.close()
