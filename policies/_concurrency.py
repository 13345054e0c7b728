"""How many calls of a tool may run at once: the concurrency mode a tool declares.

Four modes, written the same way in a ``@tool(concurrency=...)`` declaration and in a
``[tools.NAME] concurrency = "..."`` entry of the config:

``parallel``
    A call may run beside its sibling calls of the same model turn (the default of a
    ``read_only`` tool). Nothing limits calls across turns.
``serial``
    A call runs alone in its turn, after the calls before it (the default of every other
    tool). Nothing limits calls across turns.
``limited(N)``
    At most ``N`` calls of this tool run at once across the whole runtime (every turn,
    session and ``execute`` caller); the others wait, and the wait counts toward their
    deadline.
``exclusive_by_type(TYPE)`` or ``exclusive_by_type(TYPE, ARG, ...)``
    One call at a time per resource: the resource is ``TYPE`` with the values of the named
    arguments (after the path policy made them canonical), so every tool of one type shares
    its keys -- ``file_write`` and ``file_edit`` on one file never overlap. Without
    argument names the tool's path arguments are the key; a tool with neither holds the
    type itself. ``exclusive_by_type`` alone is ``exclusive_by_type(file)``.

``limited`` and ``exclusive_by_type`` calls keep their turn scheduling from the tier (a
``read_only`` tool runs beside its siblings, waiting on its limit; any other runs alone).
Parsing is strict: any other text is a :class:`ValueError` saying what is accepted.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class ConcurrencyKind(enum.StrEnum):
    """The closed vocabulary of concurrency modes."""

    PARALLEL = "parallel"
    SERIAL = "serial"
    LIMITED = "limited"
    EXCLUSIVE_BY_TYPE = "exclusive_by_type"


_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
_LIMITED = re.compile(r"limited\(\s*([0-9]{1,6})\s*\)")
_EXCLUSIVE = re.compile(
    rf"exclusive_by_type(?:\(\s*({_IDENTIFIER})((?:\s*,\s*{_IDENTIFIER})*)\s*\))?"
)
_ACCEPTED = (
    "'parallel', 'serial', 'limited(N)' with N >= 1, 'exclusive_by_type', "
    "'exclusive_by_type(TYPE)' or 'exclusive_by_type(TYPE, ARG, ...)'"
)
DEFAULT_RESOURCE = "file"
"""The resource type of ``exclusive_by_type`` without one (and of the tools that write
through a path argument)."""


@dataclass(frozen=True, slots=True)
class Concurrency:
    """A tool's concurrency mode (see the module docstring).

    >>> Concurrency.parse("limited(4)")
    Concurrency(kind=<ConcurrencyKind.LIMITED: 'limited'>, limit=4, resource='', keys=())
    >>> Concurrency.exclusive_by_type("file", "path").text
    'exclusive_by_type(file, path)'
    """

    kind: ConcurrencyKind
    limit: int = 0
    """Calls at once, for ``limited``."""
    resource: str = ""
    """The resource type, for ``exclusive_by_type``."""
    keys: tuple[str, ...] = ()
    """The arguments whose values name the resource, for ``exclusive_by_type`` (empty: the
    tool's path arguments)."""

    @classmethod
    def parallel(cls) -> Concurrency:
        return cls(ConcurrencyKind.PARALLEL)

    @classmethod
    def serial(cls) -> Concurrency:
        return cls(ConcurrencyKind.SERIAL)

    @classmethod
    def limited(cls, limit: int) -> Concurrency:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limited(N) needs a whole number N >= 1, got {limit!r}")
        return cls(ConcurrencyKind.LIMITED, limit=limit)

    @classmethod
    def exclusive_by_type(cls, resource: str = DEFAULT_RESOURCE, *keys: str) -> Concurrency:
        for name in (resource, *keys):
            if not isinstance(name, str) or re.fullmatch(_IDENTIFIER, name) is None:
                raise ValueError(
                    f"exclusive_by_type takes identifiers (a type, then argument names), "
                    f"got {name!r}"
                )
        return cls(ConcurrencyKind.EXCLUSIVE_BY_TYPE, resource=resource, keys=tuple(keys))

    @classmethod
    def parse(cls, text: str) -> Concurrency:
        """The mode ``text`` writes; :class:`ValueError` naming what is accepted."""
        if not isinstance(text, str):
            raise ValueError(f"concurrency must be text: {_ACCEPTED}; got {text!r}")
        written = text.strip()
        if written == ConcurrencyKind.PARALLEL:
            return cls.parallel()
        if written == ConcurrencyKind.SERIAL:
            return cls.serial()
        limited = _LIMITED.fullmatch(written)
        if limited is not None and int(limited[1]) >= 1:
            return cls.limited(int(limited[1]))
        exclusive = _EXCLUSIVE.fullmatch(written)
        if exclusive is not None:
            keys = [k.strip() for k in (exclusive[2] or "").split(",") if k.strip()]
            return cls.exclusive_by_type(exclusive[1] or DEFAULT_RESOURCE, *keys)
        raise ValueError(f"concurrency {text!r} is not one of {_ACCEPTED}")

    @property
    def text(self) -> str:
        """The mode as it is written in a config."""
        if self.kind is ConcurrencyKind.LIMITED:
            return f"limited({self.limit})"
        if self.kind is ConcurrencyKind.EXCLUSIVE_BY_TYPE:
            return f"exclusive_by_type({', '.join((self.resource, *self.keys))})"
        return self.kind.value

    @property
    def gated(self) -> bool:
        """Whether calls wait on a limit shared across the runtime (``limited``,
        ``exclusive_by_type``)."""
        return self.kind in (ConcurrencyKind.LIMITED, ConcurrencyKind.EXCLUSIVE_BY_TYPE)
