"""How each schedule tool's answer is shown: its details, display line and artifacts.

The scheduler binding's handlers produce the tool's output (a JSON object, its ``text``);
these functions add the rest of the tool's result (:func:`~._results.presented`), which the
relay guest copies into its result document. ``schedule_id`` and ``run_id`` details are the
output's values as they are; counts are whole numbers; the display line names a schedule
by its name, else its id.
"""

from __future__ import annotations

import json
from typing import Any

from ._results import presented

RUN_IDS = 20
"""Run ids listed in the details of ``schedule_runs``."""
SCHEDULE_IDS = 50
"""Schedule ids listed in the details of ``schedule_search``."""


def created(answer: dict[str, Any]) -> dict[str, Any]:
    """``schedule_create``: the new schedule."""
    return _changed(answer, "created", "Created")


def edited(answer: dict[str, Any]) -> dict[str, Any]:
    """``schedule_edit``: the schedule as it now is."""
    return _changed(answer, "modified", "Updated")


def deleted(answer: dict[str, Any]) -> dict[str, Any]:
    """``schedule_delete``: the id of the schedule that is gone."""
    schedule_id = _text(answer.get("schedule_id"))
    if schedule_id is None:
        return presented(_json(answer), {}, None)
    return presented(
        _json(answer),
        {"schedule_id": schedule_id},
        f"Deleted schedule {schedule_id}",
        [("schedule", schedule_id, "deleted")],
    )


def found(page: dict[str, Any]) -> dict[str, Any]:
    """``schedule_search``: a page of schedules."""
    schedules = page.get("schedules")
    listed = schedules if isinstance(schedules, list) else []
    total = _whole(page.get("total"))
    details = {
        "total": total,
        "returned": len(listed),
        "remaining": _whole(page.get("remaining")),
        "schedule_ids": _ids(listed, "schedule_id", SCHEDULE_IDS),
    }
    shown = f"Found {total} schedule{'' if total == 1 else 's'} (showing {len(listed)})"
    return presented(_json(page), details, shown)


def runs(answer: dict[str, Any]) -> dict[str, Any]:
    """``schedule_runs``: the latest runs of a schedule."""
    listed = answer.get("runs")
    count = len(listed) if isinstance(listed, list) else 0
    details = _raw(answer, "schedule_id") | {
        "runs": count,
        "run_ids": _ids(listed if isinstance(listed, list) else [], "run_id", RUN_IDS),
    }
    schedule_id = _text(answer.get("schedule_id")) or ""
    shown = f"Listed {count} run{'' if count == 1 else 's'} of schedule {schedule_id}"
    return presented(_json(answer), details, shown)


def run_output(chunk: dict[str, Any]) -> dict[str, Any]:
    """``schedule_run_output``: a chunk of a run's output, and where it lies in the whole."""
    offset, remaining = _whole(chunk.get("offset")), _whole(chunk.get("remaining"))
    total = _whole(chunk.get("total_chars"))
    details = _raw(chunk, "run_id") | {
        "offset": offset,
        "chars": max(0, total - remaining - offset),
        "remaining": remaining,
        "total_chars": total,
    }
    run_id = _text(chunk.get("run_id")) or ""
    shown = (
        f"Read characters {offset}-{total - remaining} of the output of run {run_id} "
        f"({total} in all)"
    )
    return presented(_json(chunk), details, shown)


def _changed(answer: dict[str, Any], action: str, verb: str) -> dict[str, Any]:
    """A created or edited schedule: its id, name, status and next run."""
    schedule_id = _text(answer.get("schedule_id"))
    name = _text(answer.get("name"))
    next_run = _text(answer.get("next_run_at"))
    details: dict[str, Any] = {}
    for key in ("schedule_id", "name", "status", "next_run_at"):
        details |= _raw(answer, key)
    named = name if name is not None else schedule_id if schedule_id is not None else ""
    shown = f"{verb} schedule {named} (next run {next_run if next_run is not None else 'none'})"
    artifacts = [] if schedule_id is None else [("schedule", schedule_id, action)]
    return presented(_json(answer), details, shown, artifacts)


def _json(output: dict[str, Any]) -> str:
    return json.dumps(output, ensure_ascii=False)


def _raw(answer: dict[str, Any], key: str) -> dict[str, Any]:
    """``{key: value}`` of the output's member, as it is; nothing when it has none."""
    return {key: answer[key]} if key in answer else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _whole(value: object) -> int:
    """A count of the output (0 when it is not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value)


def _ids(entries: list[Any], key: str, most: int) -> list[Any]:
    """The ``key`` members of ``entries`` that are set, at most ``most`` of them."""
    values = [e.get(key) for e in entries if isinstance(e, dict)]
    return [v for v in values if v is not None][:most]
