"""Where a store's URL points: the one reading of ``[state] url`` for every store.

=====================================  ==============================================
URL                                    backend
=====================================  ==============================================
``sqlite:///abs/path/state.db``        embedded SQLite file at an absolute path
``sqlite:relative/state.db``           embedded, relative to ``base_dir``
``libsql://host[:port]``               libSQL server over HTTPS (``?tls=0``: HTTP)
``http://host:port``, ``https://…``    libSQL server over HTTP(S)
=====================================  ==============================================

A libSQL server's auth token comes from the configuration or the URL's ``authToken``
parameter; the URL a store shows never carries it. The state store
(:func:`~toolcage.host_bindings._store.open_store`) and the schedule tables beside it
(:func:`~toolcage.host_bindings._scheduler.open_schedule_store`) both read it here.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from toolcage.policies._state import LIBSQL_EXTRA, libsql_client_installed

from ._errors import StoreUnavailable


@dataclass(frozen=True, slots=True)
class Server:
    """A libSQL server, as a URL names it."""

    endpoint: str
    """The HTTP(S) endpoint requests go to."""
    token: str | None
    """The URL's ``authToken``, if it has one."""
    shown: str
    """The URL to show: the configured one without its parameters (and so its token)."""


def locate(url: str, base_dir: Path) -> Path | Server:
    """The embedded file or the libSQL server ``url`` names; :class:`StoreUnavailable`
    naming it and what is wrong when it names neither (or libsql-client is missing)."""
    parsed = urllib.parse.urlsplit(url)
    scheme = parsed.scheme.lower()
    if scheme == "sqlite":
        return _sqlite_path(url, parsed, base_dir)
    if scheme in ("libsql", "http", "https"):
        if not libsql_client_installed():
            raise StoreUnavailable(url, LIBSQL_EXTRA)
        return _server(url, parsed)
    raise StoreUnavailable(url, "the scheme must be sqlite:, libsql:, http: or https:")


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


def _sqlite_path(url: str, parsed: urllib.parse.SplitResult, base_dir: Path) -> Path:
    if parsed.netloc or parsed.query or parsed.fragment:
        raise StoreUnavailable(
            url, "write sqlite:///absolute/path.db or sqlite:relative/path.db (no host or query)"
        )
    path = urllib.parse.unquote(parsed.path)
    if not path:
        raise StoreUnavailable(url, "no database path")
    return Path(path) if path.startswith("/") else base_dir / path


def _server(url: str, parsed: urllib.parse.SplitResult) -> Server:
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
    return Server(endpoint, token, shown)
