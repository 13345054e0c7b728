"""What a backend raises, for the state store and the schedule store alike.

::

    StoreError               the store failed; ``fix`` says what the operator can do
    ├── StoreUnavailable     it cannot be opened or reached (names the URL)
    └── StoreTimeout         the call's deadline came while it waited; nothing was kept

:mod:`toolcage.host_bindings._store` exports them; the state store's own
``EmbeddingModelMismatch`` is a :class:`StoreError` too.
"""

from __future__ import annotations


class StoreError(Exception):
    """The store failed: cannot be opened, is corrupt, or its backend refused a statement.

    ``fix``, when known, says what the operator can do about it (``toolcage check`` shows
    it); the message already names the cause.
    """

    def __init__(self, message: str, *, fix: str = "") -> None:
        super().__init__(message)
        self.fix = fix


class StoreUnavailable(StoreError):
    """The store at ``url`` cannot be opened or reached."""

    def __init__(self, url: str, reason: str, *, fix: str = "") -> None:
        super().__init__(f"state store {url!r} cannot be opened: {reason}", fix=fix)
        self.url = url
        self.reason = reason


class StoreTimeout(StoreError, TimeoutError):
    """The call's deadline came while the store waited (for another writer's lock, or a
    server's answer); nothing of the request was kept."""
