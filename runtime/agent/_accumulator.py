"""Assembling tool calls from a streamed response.

Providers stream a call in pieces: a *start* (its id and name) at some content index, then
*deltas* of its arguments' JSON text, then an *end*. Pieces of different calls may interleave
(OpenAI keys them by ``index``, Anthropic by content-block index, Responses by output index),
so each call is assembled under its own key and the calls are returned in the order they
started -- the model's call order.

Arguments that never become a valid JSON object are not an exception here: the call keeps its
raw text, and the pipeline answers it with a ``validation_error`` the model can correct
(``execute_call`` decodes JSON text and says where the text broke). A call that never ended
(the stream was cut) is kept the same way.

>>> acc = ToolCallAccumulator()
>>> acc.start(0, "call_1", "echo")
>>> acc.delta(0, '{"text": ')
>>> acc.delta(0, '"hi"}')
>>> acc.end(0)
>>> acc.finish()
(ToolCall(name='echo', arguments={'text': 'hi'}, id='call_1'),)
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._errors import UsageError
from .._tool import ToolCall


@dataclass(slots=True)
class _Partial:
    id: str
    """The provider's id (generated when it gave none)."""
    name: str
    """The tool name (some servers repeat or complete it in later deltas)."""
    fragments: list[str] = field(default_factory=list)
    """Arguments text so far."""
    arguments: Mapping[str, Any] | None = None
    """Arguments given whole (Gemini, or a non-streamed block), instead of fragments."""


class ToolCallAccumulator:
    """Collects start / delta / end pieces per key into whole :class:`ToolCall` objects."""

    def __init__(self, id_prefix: str = "call_") -> None:
        self._calls: dict[Hashable, _Partial] = {}
        self._id_prefix = id_prefix

    def __contains__(self, key: Hashable) -> bool:
        return key in self._calls

    def __len__(self) -> int:
        return len(self._calls)

    def start(
        self,
        key: Hashable,
        call_id: str,
        name: str,
        arguments: Mapping[str, Any] | None = None,
    ) -> None:
        """A call begins at ``key``; ``arguments`` when the provider sent them whole."""
        if key in self._calls:
            raise UsageError(f"a tool call already started at {key!r}")
        self._calls[key] = _Partial(
            call_id or self._id_prefix + secrets.token_hex(12), name, arguments=arguments
        )

    def rename(self, key: Hashable, name: str) -> None:
        """The name arrived (or was completed) after the start."""
        self._get(key).name = name

    def delta(self, key: Hashable, fragment: str) -> None:
        """More arguments text for the call at ``key``."""
        self._get(key).fragments.append(fragment)

    def end(self, key: Hashable, full_text: str | None = None) -> None:
        """The call at ``key`` is complete; ``full_text`` replaces the fragments when the
        provider repeats the whole arguments text at the end."""
        partial = self._get(key)
        if full_text is not None:
            partial.fragments = [full_text]

    def finish(self) -> tuple[ToolCall, ...]:
        """Every call, in the order they started."""
        return tuple(_assemble(p) for p in self._calls.values())

    def _get(self, key: Hashable) -> _Partial:
        try:
            return self._calls[key]
        except KeyError:
            raise UsageError(f"no tool call started at {key!r}") from None


def _assemble(partial: _Partial) -> ToolCall:
    text = "".join(partial.fragments)
    if partial.arguments is not None and not text.strip():
        return ToolCall(partial.name, dict(partial.arguments), partial.id)
    if not text.strip():
        return ToolCall(partial.name, {}, partial.id)
    try:
        value = json.loads(text)
    except ValueError:
        return ToolCall(partial.name, text, partial.id)
    if isinstance(value, dict):
        return ToolCall(partial.name, value, partial.id)
    return ToolCall(partial.name, text, partial.id)
