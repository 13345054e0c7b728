"""``open_store``: the one place a state-store URL becomes a backend.

The URL's forms are :mod:`~toolcage.host_bindings._backends._urls`' (``sqlite:`` for an
embedded file, ``libsql:``/``http(s):`` for a libSQL server). A libSQL server's auth token
comes from ``auth_token`` or the URL's ``authToken`` parameter; the store's ``url`` never
carries it.
"""

from __future__ import annotations

from pathlib import Path

from toolcage.policies import StateConfig

from .._backends._urls import locate
from ._protocol import StateStore, StoreUnavailable


def auth_token(state: StateConfig, url: str) -> str | None:
    """The ``[state]`` section's libSQL token; :class:`~._protocol.StoreUnavailable` naming
    ``url`` when the variable it names is unset."""
    try:
        return state.token()
    except ValueError as exc:  # it names the key and the variable
        raise StoreUnavailable(url, str(exc)) from None


def open_store(
    url: str,
    *,
    base_dir: Path,
    auth_token: str | None = None,
    dimensions: int | None = None,
    timeout: float = 30.0,
) -> StateStore:
    """The store at ``url``, migrated to the current schema.

    ``dimensions``, when given, is the configured embedder's: a store that already holds
    vectors of another length refuses to open, naming both. ``timeout`` is how long each
    request to a libSQL server may take. Raises
    :class:`~._protocol.StoreUnavailable` (naming the URL) when it cannot be opened.
    """
    where = locate(url, base_dir)
    store: StateStore
    if isinstance(where, Path):
        from ._sqlite import EmbeddedStore

        store = EmbeddedStore(where, url=url)
    else:
        from ._libsql import RemoteStore

        token = auth_token or where.token
        store = RemoteStore(where.endpoint, url=where.shown, auth_token=token, timeout=timeout)
    if dimensions is not None:
        _check_dimensions(store, dimensions)
    return store


def _check_dimensions(store: StateStore, dimensions: int) -> None:
    stored = store.stored_model()
    if stored is not None and stored[1] != dimensions:
        url = store.url
        store.close()
        raise StoreUnavailable(
            url,
            f"it holds vectors of {stored[1]} dimensions ({stored[0]}), the embedder makes"
            f" {dimensions}; configure the embedder back or drop the stored vectors",
        )
