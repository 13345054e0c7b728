"""The end-of-command report: the shell's final directory and its exported variables.

After the command, the prelude writes ``cwd\\0PATH\\0`` and then the output of bash's own
``export -p`` -- a builtin, so reporting costs no process (listing the variables through
``$(compgen -e)`` forks a subshell, and looping over ``${!A@}`` .. ``${!z@}`` costs bash
more than the command). Bash quotes each value either in double quotes (``"`` ``\\``
``$`` and a backquote escaped with a backslash) or, when it holds anything not printable,
as ``$'...'`` with C escapes; both are read back here. A variable declared but unset has no
value and is left out, and so are arrays; anything not in those forms makes the report count
as absent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

REPORT_BYTES = 256 * 1024
"""A larger report (cwd and environment) is ignored."""

_PLAIN = re.compile(rb'declare -x ([A-Za-z_][A-Za-z0-9_]*)="([^"\\$`]*)"\n')
"""The usual line: an exported variable whose double-quoted value needs no unescaping."""
_DECLARATION = re.compile(rb"(?:declare -([a-zA-Z]+)|export) ([A-Za-z_][A-Za-z0-9_]*)(=?)")
_SIMPLE = {
    ord("a"): b"\a", ord("b"): b"\b", ord("e"): b"\x1b", ord("E"): b"\x1b", ord("f"): b"\f",
    ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t", ord("v"): b"\v", ord("\\"): b"\\",
    ord("'"): b"'", ord('"'): b'"', ord("?"): b"?",
}  # fmt: skip
_OCTAL = b"01234567"
_HEX = b"0123456789abcdefABCDEF"


class ReportError(ValueError):
    """The report is not in the form the prelude writes."""


@dataclass
class Report:
    """What the command's shell reported at its end."""

    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)


def parse_report(data: bytes) -> Report | None:
    """``cwd\\0PATH\\0`` and then ``export -p`` output; ``None`` if absent or odd."""
    if not data.startswith(b"cwd\0") or len(data) > REPORT_BYTES:
        return None
    end = data.find(b"\0", 4)
    if end < 0:
        return None
    try:
        return Report(data[4:end].decode("utf-8"), _variables(data, end + 1))
    except (ReportError, UnicodeDecodeError):
        return None


def _variables(data: bytes, pos: int) -> dict[str, str]:
    env: dict[str, str] = {}
    while pos < len(data):
        plain = _PLAIN.match(data, pos)
        if plain is not None:
            env[plain[1].decode()] = plain[2].decode("utf-8")
            pos = plain.end()
            continue
        match = _DECLARATION.match(data, pos)
        if match is None:
            raise ReportError(f"unexpected text at {pos}")
        flags, name, assigned = match.groups()
        pos = match.end()
        if assigned and flags is not None and set(flags.decode()) & {"a", "A"}:
            pos = _skip_array(data, pos)  # arrays are not carried over
        elif assigned:
            value, pos = _value(data, pos)
            env[name.decode()] = value.decode("utf-8")
        if data[pos : pos + 1] != b"\n":
            raise ReportError(f"no end of line at {pos}")
        pos += 1
    return env


def _value(data: bytes, pos: int) -> tuple[bytes, int]:
    """One quoted value at ``pos``: its bytes and the position after it."""
    if data.startswith(b'"', pos):
        return _double_quoted(data, pos + 1)
    if data.startswith(b"$'", pos):
        return _c_quoted(data, pos + 2)
    raise ReportError(f"unquoted value at {pos}")


def _skip_array(data: bytes, pos: int) -> int:
    """Past ``([KEY]=VALUE ...)``, a key being bare or quoted like a value."""
    if not data.startswith(b"(", pos):
        raise ReportError(f"no array at {pos}")
    pos += 1
    while True:
        while data.startswith(b" ", pos):
            pos += 1
        if data.startswith(b")", pos):
            return pos + 1
        if not data.startswith(b"[", pos):
            raise ReportError(f"no array element at {pos}")
        pos += 1
        if data[pos : pos + 1] == b'"' or data.startswith(b"$'", pos):
            _, pos = _value(data, pos)
        else:
            pos = data.find(b"]", pos)
            if pos < 0:
                raise ReportError("unterminated array key")
        if not data.startswith(b"]=", pos):
            raise ReportError(f"no array value at {pos}")
        _, pos = _value(data, pos + 2)


def _double_quoted(data: bytes, pos: int) -> tuple[bytes, int]:
    out = bytearray()
    while pos < len(data):
        byte = data[pos]
        if byte == ord('"'):
            return bytes(out), pos + 1
        if byte == ord("\\") and data[pos + 1 : pos + 2] in (b'"', b"\\", b"$", b"`"):
            out += data[pos + 1 : pos + 2]
            pos += 2
            continue
        out.append(byte)
        pos += 1
    raise ReportError("unterminated double quotes")


def _c_quoted(data: bytes, pos: int) -> tuple[bytes, int]:
    out = bytearray()
    while pos < len(data):
        byte = data[pos]
        if byte == ord("'"):
            return bytes(out), pos + 1
        if byte != ord("\\"):
            out.append(byte)
            pos += 1
            continue
        if pos + 1 >= len(data):
            break
        escape = data[pos + 1]
        if escape in _SIMPLE:
            out += _SIMPLE[escape]
            pos += 2
        elif escape in _OCTAL:
            digits = _run(data, pos + 1, _OCTAL, 3)
            out.append(int(digits, 8) & 0xFF)
            pos += 1 + len(digits)
        elif escape == ord("x") and (digits := _run(data, pos + 2, _HEX, 2)):
            out.append(int(digits, 16))
            pos += 2 + len(digits)
        elif escape == ord("c") and pos + 2 < len(data):
            out.append(data[pos + 2] & 0x1F)
            pos += 3
        else:
            out += data[pos : pos + 2]
            pos += 2
    raise ReportError("unterminated $'...'")


def _run(data: bytes, pos: int, allowed: bytes, most: int) -> bytes:
    end = pos
    while end < len(data) and end - pos < most and data[end] in allowed:
        end += 1
    return data[pos:end]
