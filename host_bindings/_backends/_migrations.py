"""Versioned migrations, kept in the database's ``store_meta`` table.

A store's tables are built by a sequence of migrations; the number applied is kept in
``store_meta`` under the store's own key (``schema_version`` for the state store,
``scheduler_schema_version`` for the schedule tables beside it in the same database), so
each backend (:mod:`._embedded`, :mod:`._remote`) runs one routine for every store:
create ``store_meta`` if missing, read the version, refuse one newer than this toolcage
knows, apply every migration past it in one transaction and record the new version.
Several processes opening one database at once serialise on that transaction, and the
loser finds the work done.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ._errors import StoreError

META_TABLE = "CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"

READ_VERSION = "SELECT value FROM store_meta WHERE key = ?"
WRITE_VERSION = "INSERT OR REPLACE INTO store_meta VALUES (?, ?)"

Statement = tuple[str, Sequence[Any]]
"""SQL and its arguments."""

Run = Callable[[str, Sequence[Any]], Sequence[Sequence[Any]]]
"""Runs one statement with its arguments; its rows."""

Step = str | Callable[[Run], list[Statement]]
"""A migration's step: SQL, or a function that reads the database and returns statements
(which run in the migration's transaction)."""


@dataclass(frozen=True, slots=True)
class Migrations:
    """The migrations of one store's tables, and the key their version is kept under."""

    key: str
    """The ``store_meta`` key of the version (the number of migrations applied)."""
    steps: Sequence[Sequence[Step]]
    """One sequence of steps per migration, oldest first."""
    what: str
    """What the tables make, as messages name it: ``"state store"``, ``"schedule store"``."""

    @property
    def newest(self) -> int:
        """The version this toolcage writes."""
        return len(self.steps)

    def past(self, version: int) -> list[Step]:
        """The steps of every migration after ``version``, in order."""
        return [step for migration in self.steps[version:] for step in migration]

    def checked(self, version: int, url: str) -> int:
        """``version``, or :class:`StoreError` with the fix when a newer toolcage wrote it."""
        if version > self.newest:
            raise StoreError(
                f"{self.what} {url!r} has schema version {version}, newer than this"
                f" toolcage's {self.newest}: a newer toolcage wrote it",
                fix="upgrade toolcage to the version that wrote it (an older one cannot read"
                " it), or point [state] url at another file",
            )
        return version

    def stamp(self) -> Statement:
        """The statement recording :attr:`newest` as the version."""
        return (WRITE_VERSION, (self.key, str(self.newest)))
