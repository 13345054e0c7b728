"""The agent's state: notes (hybrid vector and keyword search), scratchpads, embedders.

:func:`open_store` turns the configured URL into a :class:`StateStore`: an embedded
SQLite file (apsw, sqlite-vec) or a libSQL server (libsql-client over HTTP). Keyword
search ranks each user's rows by that user's own statistics (:mod:`._keywords`).

The embedders are imported on first use of their names (:pep:`562`): the store's errors
and protocol are what most importers want, and the embedders load httpx and the term
tables, which a process that embeds nothing does not need.
"""

import typing as _typing

from toolcage.policies._public import publish as _publish

from ._open import open_store
from ._protocol import (
    ConversationHit,
    Embedder,
    EmbeddingError,
    EmbeddingModelMismatch,
    NoteHit,
    NoteRecord,
    Pad,
    StateStore,
    StoreError,
    StoreTimeout,
    StoreUnavailable,
)

if _typing.TYPE_CHECKING:
    from ._embedders import OpenAIEmbedder
    from ._hashing import HashingEmbedder

_LAZY = {"HashingEmbedder": "._hashing", "OpenAIEmbedder": "._embedders"}
"""Exported names imported on first use, and the module each comes from."""

__all__ = [
    "ConversationHit",
    "Embedder",
    "EmbeddingError",
    "EmbeddingModelMismatch",
    "HashingEmbedder",
    "NoteHit",
    "NoteRecord",
    "OpenAIEmbedder",
    "Pad",
    "StateStore",
    "StoreError",
    "StoreTimeout",
    "StoreUnavailable",
    "open_store",
]

_publish(  # and the backends' errors
    globals(), [name for name in __all__ if name not in _LAZY], within="toolcage.host_bindings"
)


def __getattr__(name: str) -> _typing.Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    _publish(globals(), [name], within="toolcage.host_bindings")
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
