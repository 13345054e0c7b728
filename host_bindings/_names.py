"""Names in output, in the guest SDK's one form (``tc_buf_put_name`` in ``toolcage.c``).

A host binding whose answer names a file or an item the way a guest would (the relay
tools' details and display lines) shows it exactly as the SDK does, byte for byte, so a
name can neither forge a line nor reach a terminal as a control sequence, whichever side
wrote it. The form, over the name's UTF-8 bytes:

- ``\\\\`` for a backslash;
- ``\\xHH`` for a C0 control, DEL, or a byte that is not part of valid UTF-8;
- ``\\uHHHH`` for a C1 control, U+2028, U+2029 or a bidirectional formatting character;
- every other character as it is.

A lone surrogate in a ``str`` (JSON can carry one) is shown by the bytes the SDK's JSON
reader makes of it (``\\xed\\xa0\\x80`` for U+D800), as the guest would show it.
``tests/wasm_tools/test_shown_names.py`` pins this against the SDK over a corpus.
"""

from __future__ import annotations

_ESCAPED = frozenset(
    (*range(0x80, 0xA0), 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F))
) | frozenset(range(0x2066, 0x206A))
"""Characters shown as ``\\uHHHH`` (the SDK's ``is_shown_escaped``)."""

_PLAIN = frozenset(range(0x20, 0x7F)) - {0x5C}
"""Bytes copied as they are without a look at their neighbours."""


def shown_name(name: str | bytes) -> str:
    """``name`` in the SDK's form (see the module docstring)."""
    data = name.encode("utf-8", "surrogatepass") if isinstance(name, str) else name
    if _PLAIN.issuperset(data):
        return data.decode("ascii")
    out: list[str] = []
    for char in data.decode("utf-8", "surrogateescape"):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char == "\\":
            out.append("\\\\")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif code in _ESCAPED:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)
