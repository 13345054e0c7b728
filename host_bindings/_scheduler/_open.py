"""``open_schedule_store``: the schedule tables of the state store at a URL.

The URL is the state store's, with the same forms (:mod:`~toolcage.host_bindings._backends._urls`):
``sqlite:`` for the embedded file, ``libsql:``/``http(s):`` for a libSQL server (its
token from ``auth_token`` or the URL's ``authToken``).
"""

from __future__ import annotations

from pathlib import Path

from toolcage.host_bindings._backends._urls import locate

from ._store import ScheduleStore


def open_schedule_store(
    url: str, *, base_dir: Path, auth_token: str | None = None, timeout: float = 30.0
) -> ScheduleStore:
    """The schedule store in the database at ``url``, migrated; raises
    :class:`~toolcage.host_bindings._store.StoreUnavailable` (naming the URL) when it
    cannot be opened."""
    where = locate(url, base_dir)
    if isinstance(where, Path):
        from ._sqlite import EmbeddedScheduleStore

        return EmbeddedScheduleStore(where, url=url)
    from ._libsql import RemoteScheduleStore

    token = auth_token or where.token
    return RemoteScheduleStore(where.endpoint, url=where.shown, auth_token=token, timeout=timeout)
