"""The ``[state]`` section: where the agent's memory, scratchpads and vault live.

::

    [state]
    enabled = true                       # false: no memory, scratchpad or vault tools
    url = ".toolcage/state.db"           # a file (relative to this config), sqlite:PATH,
                                         # or a libSQL server: libsql://HOST, https://HOST
                                         # (needs pip install 'toolcage[libsql]')
    auth_token_env = "LIBSQL_TOKEN"      # or auth_token = "..." (remote stores only)
    vector_weight = 1.0                  # how much vector similarity counts in hybrid search
    fts_weight = 1.0                     # how much the keyword rank counts
    chunk_chars = 1000                   # long notes are stored as chunks of at most this
                                         # (a longer word is a chunk of its own)
    record_conversation = true           # the agent loop records each turn for memory_search

    [state.embedder]
    kind = "openai"                      # "openai" (any /v1/embeddings server), "hash", "none"
    base_url = "http://127.0.0.1:11434/v1"
    model = "nomic-embed-text"
    api_key_env = "OPENAI_API_KEY"       # or api_key = "..."
    dimensions = 768
    batch_size = 64

    [state.vault]
    dir = "/srv/toolcage/vault"          # host directory, never mounted into a guest
    max_bytes = 1048576                  # larger items are refused
    grants = { default = ["*"], support = ["smtp-password"] }

With no embedder (``kind = "none"``, the default) search is keyword-only. ``hash`` is a
deterministic embedder without a model (words hashed to directions): for tests and for
stores that want vectors without a model server. Vault grants map an agent id to the
items it may copy: literal item names, or ``*``-patterns.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from typing import Literal
from urllib.parse import quote, unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DEFAULT_STATE_FILE = Path(".toolcage/state.db")
"""The embedded store's file when ``url`` is unset, relative to the config's directory."""

DEFAULT_HASH_DIMENSIONS = 384

REMOTE_SCHEMES = ("libsql", "http", "https")
"""URL schemes of a libSQL server."""
EMBEDDED_SCHEMES = ("sqlite", "file")
"""URL schemes of the embedded store's file."""

LIBSQL_EXTRA = (
    "a libSQL server needs the libSQL client, an optional part of toolcage: "
    "pip install 'toolcage[libsql]'"
)
"""Why a remote store cannot open without ``libsql-client`` (left out of the default install:
it pulls in Sphinx and its themes)."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ITEM_PATTERN = re.compile(r"^[A-Za-z0-9._*+@=-]+$")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _scheme(url: str) -> str:
    """The URL's scheme, lowercased; ``""`` for a plain path."""
    found = _SCHEME.match(url)
    return found.group(1).lower() if found else ""


def _sqlite_url(path: Path) -> str:
    return "sqlite://" + quote(str(path.resolve()))


def _env_name(value: str | None) -> str | None:
    if value is not None and not _ENV_NAME.match(value):
        raise ValueError(f"{value!r} is not an environment variable name")
    return value


def secret_from(value: str | None, env: str | None, where: str) -> str | None:
    """``value``, or the environment variable ``env``; ``ValueError`` naming ``where`` when
    the variable is unset."""
    if env is None:
        return value
    found = os.environ.get(env)
    if not found:
        raise ValueError(f"{where}: environment variable {env} is not set")
    return found


class EmbedderConfig(_Section):
    """``[state.embedder]``: what turns note text into vectors."""

    kind: Literal["openai", "hash", "none"] = "none"
    """``openai``: an OpenAI-compatible ``/v1/embeddings`` server; ``hash``: a deterministic
    embedder of hashed words; ``none``: keyword-only search."""
    base_url: str | None = None
    """The server's API root (``https://api.openai.com/v1``); ``openai`` only."""
    model: str | None = None
    """The model the server should use; ``openai`` only."""
    api_key: str | None = Field(None, repr=False)
    """The key sent as a bearer token."""
    api_key_env: str | None = None
    """The environment variable holding the key (instead of ``api_key``)."""
    dimensions: int | None = Field(None, gt=0, le=8192)
    """Vector length: the model's (required for ``openai``), or of ``hash`` (default 384)."""
    batch_size: int = Field(64, gt=0, le=2048)
    """Texts per embeddings request."""

    @field_validator("api_key_env")
    @classmethod
    def _key_env(cls, value: str | None) -> str | None:
        return _env_name(value)

    @model_validator(mode="after")
    def _fits_kind(self) -> EmbedderConfig:
        if self.api_key is not None and self.api_key_env is not None:
            raise ValueError("set api_key or api_key_env, not both")
        if self.kind == "openai":
            if not self.model:
                raise ValueError("kind 'openai' needs model")
            if not self.base_url:
                raise ValueError("kind 'openai' needs base_url (such as https://api.openai.com/v1)")
            url = urlsplit(self.base_url)
            if url.scheme not in ("http", "https") or not url.hostname:
                raise ValueError(f"base_url {self.base_url!r} is not an http(s) URL")
            if self.dimensions is None:
                raise ValueError("kind 'openai' needs dimensions (the model's vector length)")
        elif self.base_url or self.model or self.api_key or self.api_key_env:
            raise ValueError(f"kind {self.kind!r} takes no base_url, model or api key")
        if self.kind == "none" and self.dimensions is not None:
            raise ValueError("kind 'none' makes no vectors; dimensions does not apply")
        return self

    @property
    def vector_dimensions(self) -> int | None:
        """The length of the vectors it makes; ``None`` for ``none``."""
        if self.kind == "none":
            return None
        return self.dimensions or DEFAULT_HASH_DIMENSIONS

    def key(self) -> str | None:
        """The API key, read from ``api_key_env`` when that is set."""
        return secret_from(self.api_key, self.api_key_env, "state.embedder.api_key_env")


class VaultConfig(_Section):
    """``[state.vault]``: secret files an agent can have copied for a tool, unseen."""

    dir: Path | None = None
    """Host directory of the items; relative to the config's directory. Unset: no vault."""
    max_bytes: int = Field(1 << 20, gt=0, le=1 << 30)
    """Items larger than this are refused."""
    grants: dict[str, tuple[str, ...]] = {"default": ("*",)}
    """Agent id -> item names (or ``*``-patterns) it may copy; agents not listed copy none."""

    @field_validator("grants")
    @classmethod
    def _patterns(cls, value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for agent, patterns in value.items():
            for pattern in patterns:
                if not _ITEM_PATTERN.match(pattern) or pattern in (".", ".."):
                    raise ValueError(
                        f"grants.{agent}: {pattern!r} is not an item name or pattern "
                        "(letters, digits, '.', '_', '+', '@', '=', '-' and '*'; no '/')"
                    )
        return value

    def resolved_dir(self, base_dir: Path) -> Path | None:
        """The vault's absolute host directory, or ``None`` when there is no vault."""
        return None if self.dir is None else (base_dir / self.dir).resolve()


class StateConfig(_Section):
    """The ``[state]`` section (see the module docstring)."""

    enabled: bool = True
    """Whether the memory, scratchpad and vault tools exist."""
    url: str | None = None
    """The store: a file path (relative to the config's directory) or ``sqlite:`` URL for
    the embedded store, or a ``libsql://``/``http(s)://`` URL of a libSQL server."""
    auth_token: str | None = Field(None, repr=False)
    """The libSQL server's token."""
    auth_token_env: str | None = None
    """The environment variable holding the token (instead of ``auth_token``)."""
    vector_weight: float = Field(1.0, ge=0, le=100)
    """Weight of the vector ranking in hybrid search."""
    fts_weight: float = Field(1.0, ge=0, le=100)
    """Weight of the keyword (BM25) ranking in hybrid search."""
    chunk_chars: int = Field(1000, ge=100, le=100_000)
    """Longest chunk a note is stored as, in characters (a cut never splits a word, so a
    longer word is a chunk of its own)."""
    record_conversation: bool = True
    """Whether the agent loop records each turn's user message and final answer, so
    ``memory_search`` with ``include_conversation`` can find them."""
    embedder: EmbedderConfig = EmbedderConfig()
    vault: VaultConfig = VaultConfig()

    @field_validator("auth_token_env")
    @classmethod
    def _token_env(cls, value: str | None) -> str | None:
        return _env_name(value)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("url is empty (leave it out for the embedded default)")
        scheme = _scheme(value)
        if scheme and scheme not in (*REMOTE_SCHEMES, *EMBEDDED_SCHEMES):
            raise ValueError(
                f"url {value!r}: unknown scheme {scheme!r} (a file path, sqlite:, libsql:, "
                "http(s):)"
            )
        if scheme in REMOTE_SCHEMES and not urlsplit(value).hostname:
            raise ValueError(f"url {value!r} names no host")
        if scheme in REMOTE_SCHEMES and not libsql_client_installed():
            raise ValueError(f"url {value!r}: {LIBSQL_EXTRA}")
        if scheme in EMBEDDED_SCHEMES:
            parts = urlsplit(value)
            if parts.netloc or parts.query or not parts.path:
                raise ValueError(
                    f"url {value!r}: write {scheme}:///absolute/path.db or "
                    f"{scheme}:relative/path.db"
                )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> StateConfig:
        if self.auth_token is not None and self.auth_token_env is not None:
            raise ValueError("set auth_token or auth_token_env, not both")
        if self.vector_weight == 0 and self.fts_weight == 0:
            raise ValueError("vector_weight and fts_weight are both 0; search would rank nothing")
        return self

    @property
    def remote(self) -> bool:
        """Whether the store is a libSQL server."""
        return self.url is not None and _scheme(self.url) in REMOTE_SCHEMES

    def embedded_path(self, base_dir: Path) -> Path | None:
        """The embedded store's file (absolute), or ``None`` for a remote store."""
        if self.url is None:
            return base_dir / DEFAULT_STATE_FILE
        if self.remote:
            return None
        path = unquote(urlsplit(self.url).path) if _scheme(self.url) else self.url
        return base_dir / Path(path).expanduser()

    def store_url(self, base_dir: Path) -> str:
        """The URL the store is opened with: a remote URL as given, ``sqlite:///ABSOLUTE``
        for the embedded store."""
        path = self.embedded_path(base_dir)
        if path is None:
            return self.url or ""
        return _sqlite_url(path)

    def token(self) -> str | None:
        """The libSQL token, read from ``auth_token_env`` when that is set."""
        return secret_from(self.auth_token, self.auth_token_env, "state.auth_token_env")


def libsql_client_installed() -> bool:
    """Whether ``libsql-client`` (the ``libsql`` extra) can be imported."""
    return importlib.util.find_spec("libsql_client") is not None
