"""How toolcage's commands write their logs: one line per record, as JSON or as text.

Every toolcage logger is under ``toolcage`` (``toolcage``, ``toolcage.sidecar``,
``toolcage.scheduler``, ...), and every record it writes carries a stable ``event`` name
(``tool.crash``, ``sidecar.request_failed``) and its facts as fields, given with
``extra``::

    logger.error("tool %s crashed", name, exc_info=True,
                 extra={"event": "tool.crash", "tool": name, "call_id": call_id})

The JSON formatter writes ``{"time", "level", "logger", "event", "message", fields...}``;
the text formatter writes the same on one line, fields as ``key=value``. A record's
exception becomes ``error`` (``ValueError: boom``); its traceback is written only when
``tracebacks`` is on (``-v``), so a command's stderr holds one line per record by default.
The handler :func:`configure_logging` makes carries the redacting filter
(:mod:`._log_redaction`), so no record reaches stderr unredacted, whichever library made it.

This module lives in ``policies`` because it is the one package every toolcage process
(the runtime's commands and the sidecar) already imports; it decides nothing.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import traceback
from typing import Any, TextIO

from ._log_redaction import LOG_FILTER

FORMATS = ("text", "json")

_STANDARD = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__.keys() | {"message", "asctime"}
)
"""Attributes every record has; the others were given with ``extra``."""


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD and k != "event"}


def _error(record: logging.LogRecord) -> str | None:
    if not record.exc_info or record.exc_info[1] is None:
        return None
    exc = record.exc_info[1]
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _traceback(record: logging.LogRecord) -> str:
    """The record's traceback: its ``exc_text`` when the redacting filter wrote it."""
    if record.exc_text:
        return record.exc_text
    if record.exc_info is None:
        return ""
    return "".join(traceback.format_exception(*record.exc_info))


def _time(record: logging.LogRecord) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{stamp}.{int(record.msecs):03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object per record (see the module docstring)."""

    def __init__(self, *, tracebacks: bool = False) -> None:
        super().__init__()
        self.tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "time": _time(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": getattr(record, "event", "log"),
            "message": record.getMessage(),
        }
        body.update(_fields(record))
        error = _error(record)
        if error is not None:
            body.setdefault("error", error)
        if self.tracebacks and record.exc_info:
            body["traceback"] = _traceback(record)
        return json.dumps(body, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``TIME LEVEL EVENT: message key=value ...`` on one line (a traceback, when on,
    follows on its own lines)."""

    def __init__(self, *, tracebacks: bool = False) -> None:
        super().__init__()
        self.tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        fields = _fields(record)
        error = _error(record)
        if error is not None:
            fields.setdefault("error", error)
        event = getattr(record, "event", "log")
        line = f"{_time(record)} {record.levelname} {event}: {_one_line(record.getMessage())}"
        for key, value in fields.items():
            line += f" {key}={_value(value)}"
        if self.tracebacks and record.exc_info:
            line += "\n" + _traceback(record).rstrip()
        return line


def _one_line(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if text and all(c.isprintable() and not c.isspace() and c not in "\"'=" for c in text):
        return text
    return json.dumps(text, ensure_ascii=False)


def add_logging_arguments(parser: argparse.ArgumentParser) -> None:
    """``--log-format json|text`` and ``-v`` (repeatable) on a command's parser."""
    parser.add_argument(
        "--log-format",
        choices=FORMATS,
        default="text",
        help="how log records are written to stderr (default: text)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log more: -v info and tracebacks, -vv debug",
    )


def configure_logging(
    log_format: str, verbosity: int, *, daemon: bool = False, stream: TextIO | None = None
) -> None:
    """Write log records to ``stream`` (stderr) in ``log_format``: warnings and worse (a
    ``daemon`` also says what it starts and stops: info), with no traceback; each ``-v``
    (``verbosity``) goes one level further (info, then debug, of every library too) and
    turns tracebacks on."""
    tracebacks = verbosity >= 1
    verbosity += daemon
    formatter: logging.Formatter = (
        JsonFormatter(tracebacks=tracebacks)
        if log_format == "json"
        else TextFormatter(tracebacks=tracebacks)
    )
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(formatter)
    handler.addFilter(LOG_FILTER)
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(
        handlers=[handler], level=logging.DEBUG if verbosity >= 2 else logging.WARNING, force=True
    )
    logging.getLogger("toolcage").setLevel(level)
