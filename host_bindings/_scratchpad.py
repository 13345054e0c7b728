"""The ``scratchpad`` binding: one list of short items per session, replaced whole.

The pad is the call's own: its ``user_id`` and ``session_id`` come from the call's
:class:`CallState`, never from the guest, so nothing of another session or user is
reachable. A write stores the call's whole principal as the pad's last writer. Results
are ``{"ok": true, "text": ...}`` with the tool's JSON output::

    read   {"offset": 0}               -> {"session_id", "items", "updated_at", "item_count"}
    write  {"items": ["...", ...]}     -> {"updated": true, "item_count", "message"}
    clear  {}                          -> {"cleared", "message"}

A pad too long for the output limit (32 items of four-byte characters are ~31 KB) is read
in parts: the answer then holds the items that fit, ``next_offset`` and a ``hint`` to read
on from there (see :mod:`._fit`). ``items`` is 1 to :data:`MAX_ITEMS` strings of at most
:data:`MAX_ITEM_CHARS` characters; anything else is a ``validation_error`` saying what to
change.
"""

from __future__ import annotations

import json
from typing import Any

import wasmtime

from ._abi import module_name
from ._base import CallState
from ._fit import MARGIN, json_bytes
from ._results import JsonHandler, define_json_calls, presented
from ._state import InvalidRequest, StateServices, answering

MAX_ITEMS = 32
MAX_ITEM_CHARS = 240


class ScratchpadBinding:
    """Capability ``scratchpad``: ``toolcage_scratchpad_v1.read``/``write``/``clear``."""

    name = "scratchpad"

    def __init__(self, services: StateServices) -> None:
        self._services = services

    def calls(self) -> dict[str, JsonHandler]:
        """The calls this binding answers, by import name."""
        return {
            "read": answering(self.read),
            "write": answering(self.write),
            "clear": answering(self.clear),
        }

    def define(self, linker: wasmtime.Linker) -> None:
        define_json_calls(linker, module_name(self.name), self.calls())

    def read(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """The session's pad from item ``offset`` on (no items and no ``updated_at`` when it
        has none), as many items as fit ``state.reply_bytes``; a pad that does not fit is
        read in parts, each saying where the next one starts."""
        offset = request.get("offset", 0)
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise InvalidRequest("offset must be a whole number of items to skip, 0 or more")
        pad = self._services.store.read_pad(state.principal.user_id, state.principal.session_id)
        items = [] if pad is None else list(pad.items)
        answer: dict[str, Any] = {
            "session_id": state.principal.session_id,
            "items": items[offset:],
            "updated_at": None if pad is None else pad.updated_at,
            "item_count": len(items),
        }
        if offset:
            answer["offset"] = offset
        budget = state.reply_bytes - MARGIN
        while len(answer["items"]) > 1 and json_bytes(answer) > budget:
            answer["items"].pop()
            shown = offset + len(answer["items"])
            answer["next_offset"] = shown
            answer["hint"] = (
                f"items {offset} to {shown - 1} of {len(items)} fit the output limit; "
                f"call scratchpad_read with offset {shown} for the rest"
            )
        count = len(items)
        details = {"item_count": count, "updated_at": answer["updated_at"]}
        return presented(_json(answer), details, f"Read the scratchpad ({_items_shown(count)})")

    def write(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """Replace the session's pad with ``items``."""
        items = _items(request.get("items"))
        pad = self._services.store.write_pad(state.principal, items)
        count = len(pad.items)
        answer = {
            "updated": True,
            "item_count": count,
            "message": f"the scratchpad now holds {count} item{'s' if count != 1 else ''}",
        }
        shown = f"Wrote the scratchpad ({_items_shown(count)})"
        return presented(_json(answer), {"item_count": count}, shown)

    def clear(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """Empty the session's pad."""
        del request
        cleared = self._services.store.clear_pad(
            state.principal.user_id, state.principal.session_id
        )
        message = "the scratchpad was cleared" if cleared else "the scratchpad was already empty"
        shown = "Cleared the scratchpad" if cleared else "The scratchpad was already empty"
        return presented(
            _json({"cleared": cleared, "message": message}), {"cleared": cleared}, shown
        )


def _items(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
        raise InvalidRequest("items must be a list of strings")
    if not 1 <= len(value) <= MAX_ITEMS:
        raise InvalidRequest(
            f"items holds {len(value)} entries; write 1 to {MAX_ITEMS} (scratchpad_clear "
            "empties the pad)"
        )
    for index, item in enumerate(value):
        if not item.strip():
            raise InvalidRequest(f"items[{index}] is empty; every item says something")
        if len(item) > MAX_ITEM_CHARS:
            raise InvalidRequest(
                f"items[{index}] is {len(item)} characters; each item holds at most "
                f"{MAX_ITEM_CHARS} (split it or shorten it)"
            )
    return list(value)


def _json(result: dict[str, Any]) -> str:
    return json.dumps(result, ensure_ascii=False)


def _items_shown(count: int) -> str:
    return f"{count} item{'' if count == 1 else 's'}"
