"""A reader for sed scripts, enough to find the commands that run programs or write files.

GNU sed runs shell commands with ``e`` (a command, and a flag of ``s``) and writes files
with ``w``/``W`` (a command, and a flag of ``s``). Finding them needs the script's
structure -- ``s/e/w/`` has neither -- so this walks it the way sed's own compiler does:
addresses, the command letter, then that command's own syntax (delimited parts for
``s`` and ``y``, text to end of line for ``a``/``i``/``c`` and the file commands, labels
to a blank, ``;``, ``}`` or newline). Whatever it does not recognise is refused.
"""

from __future__ import annotations

from ._words import ShellPolicyViolation

_NO_ARGUMENT = frozenset("=dDgGhHnNpPxzF")
_OPTIONAL_NUMBER = frozenset("qQlL")
_LABEL = frozenset(":btT")
_TEXT = frozenset("aic")
_S_FLAGS = frozenset("gpiImM0123456789")


def check_sed_script(script: str) -> None:
    """Raise :class:`ShellPolicyViolation` if ``script`` may run or write anything."""
    _SedReader(script).read()


class _SedReader:
    def __init__(self, script: str) -> None:
        self.s = script
        self.i = 0

    def refuse(self, reason: str) -> ShellPolicyViolation:
        return ShellPolicyViolation(self.s, f"sed: {reason}")

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def skip(self, chars: str) -> None:
        while self.i < len(self.s) and self.s[self.i] in chars:
            self.i += 1

    def read(self) -> None:
        while True:
            self.skip(" \t\n;")
            if self.i >= len(self.s):
                return
            if self.peek() == "#":
                self.to_line_end()
                continue
            self.addresses()
            self.skip(" \t")
            while self.peek() == "!":
                self.i += 1
                self.skip(" \t")
            self.command()

    def addresses(self) -> None:
        if not self.address():
            return
        self.skip(" \t")
        if self.peek() == ",":
            self.i += 1
            self.skip(" \t")
            if self.peek() in ("+", "~"):
                self.i += 1
                self.number(required=True)
            elif not self.address():
                raise self.refuse("a second address is missing")

    def address(self) -> bool:
        c = self.peek()
        if c.isdigit():
            self.number(required=True)
            if self.peek() == "~":
                self.i += 1
                self.number(required=True)
            return True
        if c == "$":
            self.i += 1
            return True
        if c in ("/", "\\"):
            if c == "\\":
                self.i += 1
                c = self.peek()
                if not c or c in "\n\\":
                    raise self.refuse("a bad regular-expression delimiter")
            self.i += 1
            self.delimited(c)
            while self.peek() in ("I", "M"):
                self.i += 1
            return True
        return False

    def number(self, *, required: bool) -> None:
        start = self.i
        while self.peek().isdigit():
            self.i += 1
        if required and self.i == start:
            raise self.refuse("a number is missing")

    def delimited(self, delimiter: str) -> None:
        """Up to and past the next unescaped ``delimiter`` (sed ignores brackets here)."""
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "\\":
                self.i += 2
                continue
            if c == "\n":
                raise self.refuse("a newline inside a delimited part")
            self.i += 1
            if c == delimiter:
                return
        raise self.refuse("an unterminated regular expression or replacement")

    def to_line_end(self) -> None:
        while self.i < len(self.s) and self.s[self.i] != "\n":
            self.i += 2 if self.s[self.i] == "\\" else 1

    def command(self) -> None:
        c = self.peek()
        if not c:
            raise self.refuse("an address without a command")
        self.i += 1
        if c in "{}":
            return
        if c == "e":
            raise self.refuse("the 'e' command runs a shell command")
        if c in "wW":
            raise self.refuse(f"the '{c}' command writes a file")
        if c in "rR":
            self.to_line_end()  # reads a file: the file name runs to the end of the line
            return
        if c in _TEXT:
            self.to_line_end()
            return
        if c in _LABEL:
            self.skip(" \t")
            # a label ends at a blank, ';', newline or '}' -- stopping early is the safe side
            while self.i < len(self.s) and self.s[self.i] not in " \t;\n}":
                self.i += 1
        elif c == "s":
            self.substitution()
        elif c == "y":
            delimiter = self.delimiter()
            self.delimited(delimiter)
            self.delimited(delimiter)
        elif c in _OPTIONAL_NUMBER:
            self.skip(" \t")
            self.number(required=False)
        elif c == "v":
            while self.i < len(self.s) and self.s[self.i] not in ";\n}":
                self.i += 1
        elif c not in _NO_ARGUMENT:
            raise self.refuse(f"unknown command {c!r}")
        self.end_of_command()

    def delimiter(self) -> str:
        d = self.peek()
        if not d or d in "\n\\":
            raise self.refuse("a bad delimiter")
        self.i += 1
        return d

    def substitution(self) -> None:
        delimiter = self.delimiter()
        self.delimited(delimiter)
        self.delimited(delimiter)
        while self.i < len(self.s):
            flag = self.s[self.i]
            if flag == "e":
                raise self.refuse("the 'e' flag of 's' runs the result as a command")
            if flag == "w":
                raise self.refuse("the 'w' flag of 's' writes a file")
            if flag not in _S_FLAGS:
                break
            self.i += 1

    def end_of_command(self) -> None:
        self.skip(" \t")
        if self.peek() not in ("", ";", "\n", "}", "#"):
            raise self.refuse(f"unexpected {self.peek()!r} after a command")
