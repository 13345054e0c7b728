"""``open_store``: the one place a state-store URL becomes a backend.

=====================================  ==============================================
URL                                    backend
=====================================  ==============================================
``sqlite:///abs/path/state.db``        embedded SQLite file at an absolute path
``sqlite:relative/state.db``           embedded, relative to ``base_dir``
``libsql://host[:port]``               libSQL server over HTTPS (``?tls=0``: HTTP)
``http://host:port``, ``https://…``    libSQL server over HTTP(S)
=====================================  ==============================================

A libSQL server's auth token comes from ``auth_token`` or the URL's ``authToken``
parameter; the store's ``url`` never carries it.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from toolcage.policies import StateConfig
from toolcage.policies._state import LIBSQL_EXTRA, libsql_client_installed

from ._protocol import StateStore, StoreUnavailable


def auth_token(state: StateConfig, url: str) -> str | None:
    """The ``[state]`` section's libSQL token; :class:`~._protocol.StoreUnavailable` naming
    ``url`` when the variable it names is unset."""
    try:
        return state.token()
    except ValueError as exc:  # it names the key and the variable
        raise StoreUnavailable(url, str(exc)) from None


def make_room(path: Path, url: str) -> None:
    """Make the directory of the configured embedded store file ``path``.

    A symbolic link in ``path``'s place is followed when the store is opened; one whose
    target's directory does not exist is refused (:class:`StoreUnavailable` naming both)
    rather than have that directory made wherever the link points.
    """
    if path.is_symlink() and not path.exists():
        target = path.resolve()
        if not target.parent.is_dir():
            raise StoreUnavailable(
                url,
                f"{path} is a symbolic link to {target}, whose directory does not exist",
                fix=f"create {target.parent}, or replace the link",
            )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
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
    parsed = urllib.parse.urlsplit(url)
    scheme = parsed.scheme.lower()
    store: StateStore
    if scheme == "sqlite":
        from ._sqlite import EmbeddedStore

        store = EmbeddedStore(_sqlite_path(url, parsed, base_dir), url=url)
    elif scheme in ("libsql", "http", "https"):
        if not libsql_client_installed():
            raise StoreUnavailable(url, LIBSQL_EXTRA)
        from ._libsql import RemoteStore

        endpoint, token, shown = _remote_endpoint(url, parsed)
        store = RemoteStore(endpoint, url=shown, auth_token=auth_token or token, timeout=timeout)
    else:
        raise StoreUnavailable(url, "the scheme must be sqlite:, libsql:, http: or https:")
    if dimensions is not None:
        _check_dimensions(store, dimensions)
    return store


def _sqlite_path(url: str, parsed: urllib.parse.SplitResult, base_dir: Path) -> Path:
    if parsed.netloc or parsed.query or parsed.fragment:
        raise StoreUnavailable(
            url, "write sqlite:///absolute/path.db or sqlite:relative/path.db (no host or query)"
        )
    path = urllib.parse.unquote(parsed.path)
    if not path:
        raise StoreUnavailable(url, "no database path")
    return Path(path) if path.startswith("/") else base_dir / path


def _remote_endpoint(url: str, parsed: urllib.parse.SplitResult) -> tuple[str, str | None, str]:
    """The HTTP(S) endpoint, the token in the URL, and the URL to show (without it)."""
    scheme = parsed.scheme.lower()
    token: str | None = None
    tls: bool | None = None
    for key, value in urllib.parse.parse_qsl(parsed.query, keep_blank_values=True):
        if key == "authToken":
            token = value or None
        elif key == "tls" and value in ("0", "1"):
            tls = value == "1"
        else:
            raise StoreUnavailable(url, f"unknown URL parameter {key!r}")
    if not parsed.hostname:
        raise StoreUnavailable(url, "no host")
    if scheme == "libsql":
        scheme = "http" if tls is False else "https"
    elif tls is not None and tls != (scheme == "https"):
        raise StoreUnavailable(url, f"tls={int(tls)} contradicts {scheme}:")
    endpoint = urllib.parse.urlunsplit((scheme, parsed.netloc, parsed.path, "", ""))
    shown = urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, parsed.path, "", ""))
    return endpoint, token, shown


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
