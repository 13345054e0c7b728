"""Recording a turn of the agent loop in the state store, for ``memory_search``.

When a turn ends, :func:`record_turn` stores what the user said (the last message the
turn was given, if it is the user's) and the assistant's final text as two conversation
events of the turn's principal -- its ``user_id`` and ``session_id``, and the whole
principal as their writer -- so ``memory_search`` with ``include_conversation`` can find
them, in any later session of the same user, through any of the user's agents.

It costs the turn one small write transaction, run on a worker thread, and no embedding
call: events are stored as text (keyword-indexed), so a turn never waits on an embedding
server. When an embedder is configured, ``memory_search`` embeds the user's events that
have no vector yet before it searches them, off the loop's path and only for users who
search their conversations.

Recording never fails a turn: a store that cannot be opened or refuses the write, or
takes longer than :data:`RECORD_SECONDS`, is logged (``toolcage`` logger) and the turn
returns as it would have.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

import anyio
from toolcage.host_bindings import StateServices

from .._threads import run_in_worker
from .._tool import ToolExecutionContext
from .providers.base import Message, UserMessage

logger = logging.getLogger("toolcage")

MAX_EVENT_CHARS = 16_000
"""An event's text is cut to this many characters."""

RECORD_SECONDS = 10.0
"""A recording still running after this long is left to finish on its own."""


def turn_events(messages: Sequence[Message], answer: str) -> list[tuple[str, str]]:
    """The ``(role, text)`` events of a turn given ``messages`` that answered ``answer``."""
    events: list[tuple[str, str]] = []
    if messages and isinstance(messages[-1], UserMessage) and messages[-1].text.strip():
        events.append(("user", messages[-1].text[:MAX_EVENT_CHARS]))
    if answer.strip():
        events.append(("assistant", answer[:MAX_EVENT_CHARS]))
    return events


async def record_turn(
    state: StateServices | None,
    ctx: ToolExecutionContext,
    messages: Sequence[Message],
    answer: str,
) -> None:
    """Record the turn's events in ``state``'s store, when it records conversations."""
    if state is None or not state.records_conversation:
        return
    events = turn_events(messages, answer)
    if not events:
        return
    record = functools.partial(state.record_turn, ctx.principal, events)
    try:
        with anyio.move_on_after(RECORD_SECONDS) as scope:
            await run_in_worker(record)
    except Exception as exc:  # any failure of the store: the turn goes on
        logger.warning(
            "conversation turn not recorded: %s",
            exc,
            extra={"event": "turn.not_recorded", "reason": str(exc)},
        )
        return
    if scope.cancelled_caught:
        logger.warning(
            "conversation turn not recorded within %s s",
            RECORD_SECONDS,
            extra={"event": "turn.not_recorded", "reason": "timeout"},
        )
