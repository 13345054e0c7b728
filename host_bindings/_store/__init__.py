"""The agent's state: notes (hybrid vector and keyword search), scratchpads, embedders.

:func:`open_store` turns the configured URL into a :class:`StateStore`: an embedded
SQLite file (apsw, sqlite-vec) or a libSQL server (libsql-client over HTTP). Keyword
search ranks each user's rows by that user's own statistics (:mod:`._keywords`).
"""

from toolcage.policies._public import publish

from ._embedders import OpenAIEmbedder
from ._hashing import HashingEmbedder
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

publish(globals(), __all__, within="toolcage.host_bindings")  # and the backends' errors
del publish
