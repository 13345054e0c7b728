"""One JSON value per line on a text stream: what ``call`` prints, in-process or through a
server (:mod:`._client`, which imports the standard library only -- and so does this)."""

from __future__ import annotations

import json
from typing import Any, TextIO


def write_json_line(sink: TextIO, value: dict[str, Any]) -> None:
    """``value`` as one line of JSON; non-ASCII is kept unless ``sink`` cannot encode it."""
    try:
        text = json.dumps(value, ensure_ascii=False)
        try:
            text.encode(sink.encoding or "utf-8")
        except (UnicodeEncodeError, LookupError):
            text = json.dumps(value)  # \u escapes: even a lone surrogate is valid JSON
    except (TypeError, ValueError, RecursionError) as exc:
        text = json.dumps(
            {
                "status": "error",
                "tool": str(value.get("tool", "")),
                "error_type": "execution_error",
                "message": f"the result could not be written as JSON ({type(exc).__name__})",
            }
        )
    sink.write(text + "\n")
    sink.flush()
