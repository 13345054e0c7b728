"""Credentials for HTTP requests: the ``[secrets.NAME]`` section, and where each may go.

The config says where a secret's value comes from -- an environment variable or a file --
and never holds the value itself; a key named ``value`` is refused with a message that
says so. Each secret is bound to hosts and, optionally, to path prefixes, methods and
schemes; it is sent only on a request (or redirect hop) that matches all of them::

    [secrets.github]
    from_env = "GITHUB_TOKEN"         # or from_file = "/run/secrets/github"
    hosts = ["api.github.com"]        # NAME, *.NAME (subdomains), NAME:PORT, [IPv6]:PORT
    paths = ["/repos/"]               # optional; "/repos" matches /repos and /repos/...
    methods = ["GET"]                 # optional
    schemes = ["https"]               # the default
    header = "Authorization"          # optional: the host adds it on every bound request
    format = "Bearer {value}"
    description = "GitHub API token"  # shown to the model with the secret's name

A host without a port matches only the scheme's default port (443, 80). A path prefix is
compared with the request's path as sent (dot segments already resolved); a path with an
encoded dot, slash or backslash never matches, since a server may decode it into another
path. Loading the values and the per-request decisions live in :mod:`._secret_policy`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from ._hosts import host_problem

SECRET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOKEN = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")
_DEFAULT_PORTS = {"http": 80, "https": 443}
METHODS = ("GET", "POST", "PUT", "DELETE", "HEAD", "PATCH")
# Headers that frame or route the request are the HTTP client's (as for guests' headers).
_RESERVED_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer"}
)
_ENCODED_SEPARATORS = ("%2e", "%2f", "%5c", "\\")


@dataclass(frozen=True, slots=True)
class HostPattern:
    """One entry of ``hosts``: a name (or ``*.`` suffix) and an optional port."""

    name: str
    """Lower case, without brackets or a trailing dot; for a wildcard, the suffix after ``*.``."""
    wildcard: bool
    """``*.NAME``: any subdomain of NAME (not NAME itself)."""
    port: int | None
    """The only port it matches; ``None``: the scheme's default port."""

    @classmethod
    def parse(cls, entry: str) -> HostPattern:
        """``entry`` as a pattern; ``ValueError`` says what is wrong with it."""
        text, port_text = entry.strip().lower(), None
        if text.startswith("["):
            host, closed, rest = text[1:].partition("]")
            if not closed or (rest and not rest.startswith(":")):
                raise ValueError(
                    f"host {entry!r}: write an IPv6 address as [ADDRESS] or [ADDRESS]:PORT"
                )
            port_text = rest[1:] if rest else None
        elif ":" in text:
            host, _, port_text = text.rpartition(":")
            if ":" in host:
                raise ValueError(f"host {entry!r}: write an IPv6 address in brackets")
        else:
            host = text
        wildcard = host.startswith("*.")
        name = host.removeprefix("*.").rstrip(".")
        problem = host_problem(f"[{name}]" if text.startswith("[") else name)
        if "*" in name or problem is not None:
            raise ValueError(f"host {entry!r} is not a host name, *.NAME or an IP address")
        if wildcard and name.count(".") < 1:
            raise ValueError(f"host {entry!r}: a wildcard needs at least two labels after '*.'")
        port = None
        if port_text is not None:
            if not (port_text.isascii() and port_text.isdigit() and 1 <= int(port_text) <= 65535):
                raise ValueError(f"host {entry!r}: the port must be a number in 1-65535")
            port = int(port_text)
        return cls(name, wildcard, port)

    def matches(self, scheme: str, host: str, port: int) -> bool:
        """Whether a request to ``host``:``port`` over ``scheme`` matches."""
        host = host.lower().rstrip(".")
        named = host.endswith("." + self.name) if self.wildcard else host == self.name
        wanted = _DEFAULT_PORTS.get(scheme) if self.port is None else self.port
        return named and port == wanted


@functools.lru_cache(maxsize=256)
def host_patterns(entries: tuple[str, ...]) -> tuple[HostPattern, ...]:
    """``entries`` parsed (each checked when the config was loaded)."""
    return tuple(map(HostPattern.parse, entries))


def _check_host(entry: str) -> str:
    HostPattern.parse(entry)
    return entry


def _refuse_literals(value: Any) -> Any:
    """Refuse a secret written into the config text, without repeating it in the error."""
    if not isinstance(value, dict):
        raise ValueError("a table of [secrets.NAME] sections")
    for name, entry in value.items():
        if not isinstance(name, str) or not SECRET_NAME.fullmatch(name):
            raise ValueError(
                f"{name!r} is not a secret name (letters, digits, '_', '.', '-'; at most 64)"
            )
        if not isinstance(entry, dict):
            raise ValueError(
                f"{name}: a secret is a table naming from_env or from_file; its value never "
                "goes in the config text"
            )
        if "value" in entry:
            raise ValueError(
                f"{name}.value: a secret's value never goes in the config text; name where it "
                "comes from with from_env or from_file"
            )
    return value


class SecretConfig(BaseModel):
    """One ``[secrets.NAME]`` section (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    from_env: str | None = Field(None, pattern=f"^{_ENV_NAME.pattern}$")
    """The environment variable holding the value, read when the runtime is built."""
    from_file: Path | None = None
    """A file holding the value (one trailing newline is dropped); relative to the config."""
    hosts: tuple[Annotated[str, AfterValidator(_check_host)], ...] = Field(min_length=1)
    """Where it may be sent: ``NAME``, ``*.NAME``, either with ``:PORT``, or ``[IPv6]:PORT``."""
    paths: tuple[str, ...] = ()
    """Path prefixes it is limited to; empty: any path."""
    methods: tuple[Literal["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH"], ...] = ()
    """Methods it is limited to; empty: any."""
    schemes: tuple[Literal["http", "https"], ...] = ("https",)
    """Schemes it may travel over; plain http only when named here."""
    header: str | None = None
    """A header the host sets on every bound request (replacing a header of that name)."""
    format: str = "{value}"
    """The header's value, ``{value}`` standing for the secret (``Bearer {value}``)."""
    query: str | None = None
    """A query parameter the host sets on every bound request, instead of a header."""
    description: str = Field("", max_length=200)
    """What the secret is for, shown to the model beside its name."""

    @model_validator(mode="after")
    def _check(self) -> SecretConfig:
        if (self.from_env is None) == (self.from_file is None):
            raise ValueError("name exactly one of from_env and from_file")
        for prefix in self.paths:
            if not prefix.startswith("/"):
                raise ValueError(f"paths: {prefix!r} must start with '/'")
        if self.header is not None and self.query is not None:
            raise ValueError("set header or query, not both")
        if self.header is not None and (
            not _TOKEN.fullmatch(self.header) or self.header.lower() in _RESERVED_HEADERS
        ):
            raise ValueError(f"header: {self.header!r} is not a header the host may set")
        if self.query is not None and not self.query:
            raise ValueError("query: the parameter name is empty")
        if self.format.count("{value}") != 1:
            raise ValueError("format must hold '{value}' exactly once")
        if not (self.format.isascii() and self.format.isprintable()):
            raise ValueError("format must be printable ASCII")
        return self

    @property
    def added_by_host(self) -> bool:
        """Whether the host adds it to bound requests without the model asking."""
        return self.header is not None or self.query is not None

    def applies(self, scheme: str, host: str, port: int, path: str, method: str) -> bool:
        """Whether a request with these parts (``path`` as sent, no query) is bound."""
        if scheme not in self.schemes or (self.methods and method not in self.methods):
            return False
        if not any(p.matches(scheme, host, port) for p in host_patterns(self.hosts)):
            return False
        return not self.paths or _path_matches(path, self.paths)


def _path_matches(path: str, prefixes: tuple[str, ...]) -> bool:
    lowered = path.lower()
    if any(sep in lowered for sep in _ENCODED_SEPARATORS):
        return False
    for prefix in prefixes:
        if prefix.endswith("/") and path.startswith(prefix):
            return True
        if path == prefix or path.startswith(prefix + "/"):
            return True
    return False


SecretsSection = Annotated[dict[str, SecretConfig], BeforeValidator(_refuse_literals)]
"""The ``[secrets]`` section: secret name -> :class:`SecretConfig`."""
