"""The one state store and embedder of a runtime, shared by the memory, scratchpad and
vault bindings.

The store is opened on first use, not when the runtime is built: building a runtime never
touches the filesystem or the network, and a runtime whose guests never reach the store
holds nothing to close. ``on_open`` is told when it was opened, so its owner can close it
(the runtime enters :meth:`StateServices.close` into its exit stack there). A store that
cannot be opened is an ``execution_error`` of the call that needed it, naming the URL; the
next call tries again.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolcage.policies import Principal, StateConfig, VaultConfig

from ._abi import failed
from ._backends import _waits as waits
from ._backends._urls import make_room
from ._base import CallState
from ._store import (
    Embedder,
    EmbeddingError,
    StateStore,
    StoreError,
    StoreTimeout,
    StoreUnavailable,
    open_store,
)
from ._store._open import auth_token

Handler = Callable[[CallState, dict[str, Any]], dict[str, Any]]
"""Answers one request of a state binding for a call."""


class InvalidRequest(ValueError):
    """A request a state binding refuses; the message says what to change."""


def answering(handler: Handler) -> Handler:
    """``handler`` with the store's waits bounded by the call's deadline (see
    :mod:`._backends._waits`), and refused requests (``validation_error``), a deadline that
    came while the store waited (``timeout``, nothing changed) and failures of the store or
    the embedder (``execution_error``) as error results."""

    @functools.wraps(handler)
    def run(state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        try:
            with waits.until(state.deadline, state.landing.landed):
                return handler(state, request)
        except InvalidRequest as exc:
            return failed("validation_error", str(exc))
        except StoreTimeout as exc:
            return failed("timeout", str(exc))
        except (StoreError, EmbeddingError) as exc:
            return failed("execution_error", str(exc))

    return run


StoreOpener = Callable[[StateConfig, Path, str | None], StateStore]
"""Opens the store of a ``[state]`` section (relative to a directory) with its auth token."""


def _open(config: StateConfig, base_dir: Path, token: str | None) -> StateStore:
    return open_store(
        config.store_url(base_dir),
        base_dir=base_dir,
        auth_token=token,
        dimensions=config.embedder.vector_dimensions,
    )


class StateServices:
    """The store, the embedder and the vault settings of one runtime.

    >>> services = StateServices(config.state, config.base_dir)  # doctest: +SKIP
    >>> services.store.read_pad("ada", "s1")  # the first use opens the store
    >>> services.close()
    """

    CAPABILITIES = frozenset({"memory", "scratchpad", "vault"})
    """The capabilities served from the store: they exist only while ``[state]`` is enabled."""

    def __init__(
        self,
        config: StateConfig,
        base_dir: Path,
        *,
        on_open: Callable[[], None] = lambda: None,
        opener: StoreOpener = _open,
    ) -> None:
        self.config = config
        self.url = config.store_url(base_dir)
        """Where the store is (``sqlite:///ABSOLUTE`` for the embedded store)."""
        self._base_dir = base_dir
        self._file = config.embedded_path(base_dir)
        self.vault_dir = config.vault.resolved_dir(base_dir)
        """The vault's host directory, or ``None`` when no vault is configured."""
        self._on_open = on_open
        self._opener = opener
        self._lock = threading.Lock()
        self._store: StateStore | None = None
        self._embedder: Embedder | None = None
        self._closed = False

    @property
    def vault(self) -> VaultConfig:
        return self.config.vault

    @property
    def store(self) -> StateStore:
        """The store, opened on first use; :class:`StoreUnavailable` naming the URL."""
        store = self._store
        if store is not None:
            return store
        with self._lock:
            if self._closed:
                raise StoreUnavailable(self.url, "the runtime is closed")
            if self._store is None:
                token = auth_token(self.config, self.url)
                if self._file is not None:
                    make_room(self._file, self.url)
                self._store = self._opener(self.config, self._base_dir, token)
                self._on_open()
            return self._store

    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder, or ``None`` for keyword-only search."""
        if self._embedder is None and self.config.embedder.kind != "none":
            with self._lock:
                if self._embedder is None:
                    self._embedder = make_embedder(self.config)
        return self._embedder

    @property
    def records_conversation(self) -> bool:
        """Whether turns are recorded (``[state] record_conversation``)."""
        return bool(self.config.record_conversation)

    def record_turn(self, principal: Principal, events: Sequence[tuple[str, str]]) -> int:
        """Record a turn's ``(role, text)`` events of the principal's user and session in
        the store (opening it if need be), when :attr:`records_conversation`; how many were
        stored."""
        if not self.records_conversation or not events:
            return 0
        return self.store.record_events(principal, events)

    def close(self) -> None:
        """Close the store and the embedder (idempotent); later calls find it closed."""
        with self._lock:
            self._closed = True
            store, self._store = self._store, None
            embedder, self._embedder = self._embedder, None
        if store is not None:
            store.close()
        close = getattr(embedder, "close", None)
        if callable(close):
            close()


def make_embedder(config: StateConfig) -> Embedder | None:
    """The embedder ``[state.embedder]`` describes."""
    settings = config.embedder
    dimensions = settings.vector_dimensions
    if dimensions is None:
        return None
    from ._store import HashingEmbedder, OpenAIEmbedder  # httpx: only for a store that embeds

    if settings.kind == "hash":
        return HashingEmbedder(dimensions)
    return OpenAIEmbedder(
        base_url=settings.base_url or "",
        model=settings.model or "",
        dimensions=dimensions,
        api_key=settings.api_key,
        api_key_env=settings.api_key_env,
        batch_size=settings.batch_size,
    )
