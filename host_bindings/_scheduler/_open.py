"""``open_schedule_store``: the schedule tables of the state store at a URL.

The URL is the state store's, with the same forms as
:func:`~toolcage.host_bindings._store.open_store`: ``sqlite:`` for the embedded file,
``libsql:``/``http(s):`` for a libSQL server (its token from ``auth_token`` or the URL's
``authToken``).
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from toolcage.host_bindings._store._open import _remote_endpoint, _sqlite_path
from toolcage.host_bindings._store._protocol import StoreUnavailable
from toolcage.policies._state import LIBSQL_EXTRA, libsql_client_installed

from ._store import ScheduleStore


def open_schedule_store(
    url: str, *, base_dir: Path, auth_token: str | None = None, timeout: float = 30.0
) -> ScheduleStore:
    """The schedule store in the database at ``url``, migrated; raises
    :class:`~toolcage.host_bindings._store.StoreUnavailable` (naming the URL) when it
    cannot be opened."""
    parsed = urllib.parse.urlsplit(url)
    scheme = parsed.scheme.lower()
    if scheme == "sqlite":
        from ._sqlite import EmbeddedScheduleStore

        return EmbeddedScheduleStore(_sqlite_path(url, parsed, base_dir), url=url)
    if scheme in ("libsql", "http", "https"):
        if not libsql_client_installed():
            raise StoreUnavailable(url, LIBSQL_EXTRA)
        from ._libsql import RemoteScheduleStore

        endpoint, token, shown = _remote_endpoint(url, parsed)
        return RemoteScheduleStore(
            endpoint, url=shown, auth_token=auth_token or token, timeout=timeout
        )
    raise StoreUnavailable(url, "the scheme must be sqlite:, libsql:, http: or https:")
