"""Answers that fit the output limit: whole JSON the model can parse, never cut JSON.

The pipeline keeps at most the tool's ``truncate_bytes`` of a result's text (the rest goes
to the output store, see ``toolcage.runtime``'s bounding), and a JSON document cut there is
no longer JSON. A binding whose answer could pass that limit at its documented maxima
(a full scratchpad of four-byte characters, twenty long search hits) fits it instead, to
:attr:`CallState.reply_bytes`: it returns fewer items with where the rest starts (paging),
or shorter texts with their full length, and a hint the model can follow. Sizes are UTF-8
bytes of the JSON as the binding writes it (``ensure_ascii=False``).
"""

from __future__ import annotations

import json
from typing import Any

MARGIN = 256
"""Bytes left free under the limit for what travels with the answer (a hint line)."""
MIN_SHARE = 120
"""Fewest bytes of text a search hit keeps before lower-ranked hits are dropped instead."""


def json_bytes(value: Any) -> int:
    """The size of ``value`` as the JSON text a binding answers with."""
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


def cut_to(text: str, size: int) -> str:
    """``text`` cut, with an ellipsis, so that it takes at most ``size`` bytes as a JSON
    string (quotes included)."""
    if json_bytes(text) <= size:
        return text
    keep = len(text)
    while keep > 0:
        keep = min(keep - 1, keep * max(size - 5, 0) // max(json_bytes(text[:keep]), 1))
        cut = text[:keep] + "…"
        if json_bytes(cut) <= size:
            return cut
    return "…"


def fit_texts(entries: list[dict[str, Any]], key: str, budget: int) -> tuple[int, int]:
    """Make ``entries`` take at most ``budget`` bytes as JSON: cut their ``key`` texts,
    sharing the room evenly (a short text leaves its share to the others), and when even
    :data:`MIN_SHARE` bytes each would not fit, drop entries from the end first (the list
    is ranked). Each cut entry gains ``full_chars``, the length of its whole text. Returns
    how many texts were cut and how many entries dropped."""
    dropped = 0
    if not entries or json_bytes(entries) <= budget:
        return 0, 0
    while True:
        whole = [entry[key] for entry in entries]
        bare = [{**e, key: "", "full_chars": len(t)} for e, t in zip(entries, whole, strict=True)]
        share = _level(sorted(json_bytes(t) - 2 for t in whole), budget - json_bytes(bare))
        if share >= MIN_SHARE or len(entries) == 1:
            break
        entries.pop()
        dropped += 1
    while True:
        cut = 0
        for entry, text in zip(entries, whole, strict=True):
            entry[key] = cut_to(text, share + 2)
            if entry[key] != text:
                entry["full_chars"] = len(text)
                cut += 1
            else:
                entry.pop("full_chars", None)
        if json_bytes(entries) <= budget or share <= 0:
            return cut, dropped
        share = share * 9 // 10


def _level(sizes: list[int], room: int) -> int:
    """The largest share ``c`` with ``sum(min(size, c)) <= room`` (``sizes`` ascending)."""
    for index, size in enumerate(sizes):
        left = len(sizes) - index
        if size * left > room:
            return max(room // left, 0)
        room -= size
    return sizes[-1] if sizes else 0
