"""Log records redacted before any handler sees them.

Every toolcage logger (:data:`LOGGERS`; a test checks that the list names every logger the
code asks for) and httpcore's and httpx's loggers, which write request lines and headers at
``DEBUG``, carry :data:`LOG_FILTER`. It redacts a record in place -- its message (the
arguments merged in), the fields given with ``extra``, its stack and its exception, which
it writes out as ``exc_text`` (what :class:`logging.Formatter` prints) and as an ``error``
field (``ValueError: ...``, what toolcage's formatters print) -- so the embedder's own
handlers get the redacted record too. toolcage's commands also put it on their stderr
handler, which redacts what third-party libraries log there.

Loggers are the process's, not a runtime's: the filter redacts with every live
:class:`~._redaction.Redactor` registered by :func:`redact_logs` (each runtime registers
its own, holding its secrets' values and the operator's rules), and with the built-in
rules while none is. A filter runs only for records a logger makes, that is for records at
a level someone asked for.
"""

from __future__ import annotations

import logging
import threading
import traceback
import weakref
from typing import Any

from ._redaction import Redactor

LOGGERS = (
    "toolcage",
    "toolcage.audit",
    "toolcage.host_bindings",
    "toolcage.mcp",
    "toolcage.scheduler",
    "toolcage.serve",
    "toolcage.sidecar",
    "toolcage.wasm",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
    "httpx",
)
"""The loggers whose records are redacted at the source."""

_STANDARD = frozenset(
    logging.LogRecord("", 0, "", 0, "", (), None).__dict__.keys() | {"message", "asctime"}
)
"""Attributes every record has; the others were given with ``extra``."""
_PLAIN = (str, int, float, bool, type(None), dict, list, tuple)


class RedactingFilter(logging.Filter):
    """Redacts each record with every live redactor (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._redactors: weakref.WeakSet[Redactor] = weakref.WeakSet()
        self._default = Redactor()
        self._lock = threading.Lock()
        self._installed = False

    def register(self, redactor: Redactor) -> None:
        """Redact with ``redactor`` too, for as long as it lives."""
        with self._lock:
            self._redactors.add(redactor)
            if not self._installed:
                for name in LOGGERS:
                    logging.getLogger(name).addFilter(self)
                self._installed = True

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            redactors = list(self._redactors) or [self._default]
        message = record.getMessage()
        redacted = _text(redactors, message)
        if redacted != message:  # else the template stays (handlers group records by it)
            record.msg, record.args = redacted, None
        for key, value in list(record.__dict__.items()):
            if key not in _STANDARD:
                record.__dict__[key] = _value(redactors, value)
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            if not record.exc_text:
                record.exc_text = "".join(traceback.format_exception(exc)).rstrip("\n")
            record.exc_text = _text(redactors, record.exc_text)
            if "error" not in record.__dict__:
                text = str(exc)
                error = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
                record.__dict__["error"] = _text(redactors, error)
        if record.stack_info:
            record.stack_info = _text(redactors, record.stack_info)
        return True


def _text(redactors: list[Redactor], text: str) -> str:
    for redactor in redactors:
        text = redactor.text(text)
    return text


def _value(redactors: list[Redactor], value: Any) -> Any:
    if isinstance(value, str):
        return _text(redactors, value)
    if not isinstance(value, _PLAIN):
        value = str(value)  # what a formatter would print, redacted
    for redactor in redactors:
        value = redactor.value(value)
    return value


LOG_FILTER = RedactingFilter()
"""The one filter, on :data:`LOGGERS` once a redactor is registered."""


def redact_logs(redactor: Redactor) -> None:
    """Redact the records of :data:`LOGGERS` with ``redactor`` for as long as it lives."""
    LOG_FILTER.register(redactor)
