"""The operator's secrets, loaded, and which of them one request hop may carry.

Values are read once, when the runtime is built (``Runtime.from_config``): an environment
variable that is unset or empty, or a file that cannot be used, is a :class:`ConfigError`
naming the key, so a runtime never starts with a credential missing. A changed value is
seen by the next runtime built.

A file must be a regular file (links are followed: container runtimes mount secrets
through them) of at most 64 KiB, writable by its owner only: a file others may write is
one someone else can swap. Others may read it (container runtimes mount secrets ``0444``
or ``0644``); that is the operator's choice. One trailing newline is dropped.

A value must be printable ASCII (a header carries nothing else), without surrounding
spaces, and at least 8 characters long: a shorter one could not be told apart from
ordinary text when responses are redacted.

The model names a secret with a placeholder in a header value, ``{{secret:NAME}}``; the
host puts the value there when the hop is bound to the secret (:meth:`SecretConfig.applies
<toolcage.policies._secrets.SecretConfig.applies>`). A secret with ``header`` or ``query``
is added on every bound hop without the model naming it. On the first hop an unbound
placeholder is refused (:class:`SecretViolation`); on a redirect hop, the header holding it
is dropped. A hop whose URL, headers or body would carry a secret's value to a host it is
not bound to (a server echoing a query credential into a redirect's ``Location``, say) is
refused too, whatever form the value takes there: plain, percent-encoded, JSON-escaped or
base64-encoded (see :mod:`._secret_forms`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ._config import ConfigError
from ._secret_forms import SecretValues
from ._secrets import SecretConfig

PLACEHOLDER = re.compile(r"\{\{\s*secret:\s*([^{}\s]*)\s*\}\}")
"""``{{secret:NAME}}``, as a model writes it in a header value."""
_PLACEHOLDER_BYTES = re.compile(PLACEHOLDER.pattern.encode())
MAX_FILE_BYTES = 64 * 1024
MIN_VALUE_CHARS = 8


class SecretViolation(ValueError):
    """A request would carry a secret where it is not bound (``permission_denied``)."""


class SecretMisuse(ValueError):
    """A placeholder names no configured secret, or stands outside a header value
    (``validation_error``)."""


@dataclass(frozen=True, slots=True)
class Secret:
    """A configured secret with its value."""

    name: str
    """Its name in ``[secrets.NAME]``; what the model writes in a placeholder."""
    config: SecretConfig
    """Where it may go and how it is sent."""
    value: str = field(repr=False)
    """The credential; never in a repr, a message or a result."""


@dataclass(frozen=True, slots=True)
class HopCredentials:
    """What one hop sends with the secrets applied."""

    headers: dict[str, str] = field(repr=False)
    """The request headers, placeholders replaced and host-added headers set."""
    query: tuple[tuple[str, str], ...] = field(repr=False)
    """Query parameters the host sets."""
    bound: frozenset[str] = frozenset()
    """The secrets this hop may carry."""


class SecretPolicy:
    """The loaded secrets and the verdicts on each hop.

    >>> secrets = SecretPolicy.load(config.secrets, config.base_dir)
    >>> hop = secrets.for_hop("GET", "https", "api.github.com", 443, "/user", headers,
    ...                       first_hop=True, downgraded=False)
    """

    def __init__(self, secrets: Iterable[Secret] = ()) -> None:
        self._secrets = {secret.name: secret for secret in secrets}
        self.values = SecretValues((s.name, s.value) for s in self._secrets.values())
        """Every form of every value: what the check of a hop looks for, and what
        redaction replaces."""

    @classmethod
    def load(
        cls,
        section: Mapping[str, SecretConfig],
        base_dir: Path,
        environ: Mapping[str, str] | None = None,
    ) -> SecretPolicy:
        """Read every value; :class:`ConfigError` naming each key that cannot be used."""
        env = os.environ if environ is None else environ
        secrets, problems = [], []
        for name, config in section.items():
            where = f"secrets.{name}"
            try:
                if config.from_file is not None:
                    where += ".from_file"
                    value = _read_file(base_dir / config.from_file)
                else:  # from_env: exactly one of the two is set (checked at parse)
                    where += ".from_env"
                    value = env.get(config.from_env or "", "")
                    if not value:
                        raise ConfigError(f"the environment variable {config.from_env} is not set")
                _check_value(value)
            except ConfigError as exc:
                problems.append(f"{where}: {exc}")
                continue
            secrets.append(Secret(name, config, value))
        if problems:
            raise ConfigError("; ".join(problems))
        return cls(secrets)

    def __bool__(self) -> bool:
        return bool(self._secrets)

    @property
    def secrets(self) -> tuple[Secret, ...]:
        return tuple(self._secrets.values())

    def check_request(self, url: str, body: bytes) -> None:
        """Refuse a placeholder in the URL or the body: secrets go in header values only."""
        for where, text in (("the URL", url.encode("utf-8", "replace")), ("the body", body)):
            if b"{{" in text and _PLACEHOLDER_BYTES.search(text):
                raise SecretMisuse(
                    f"a {{{{secret:NAME}}}} placeholder in {where} is not replaced; secrets "
                    "go in header values only"
                )

    def for_hop(
        self,
        method: str,
        scheme: str,
        host: str,
        port: int,
        path: str,
        headers: Mapping[str, str],
        *,
        first_hop: bool,
        downgraded: bool,
    ) -> HopCredentials:
        """The headers and query parameters one hop sends (``path`` as sent, no query).

        ``downgraded``: an earlier hop of this request went over https and this one does
        not; it then carries no secret at all.
        """
        bound = frozenset(
            name
            for name, secret in self._secrets.items()
            if not downgraded and secret.config.applies(scheme, host, port, path, method)
        )
        sent: dict[str, str] = {}
        for key, value in headers.items():
            names = PLACEHOLDER.findall(value) if "{{" in value else []
            if not names:
                sent[key] = value
                continue
            self._check_names(names)
            unbound = [name for name in names if name not in bound]
            if unbound and first_hop:
                config = self._secrets[unbound[0]].config
                raise SecretViolation(
                    f"secret {unbound[0]!r} is not bound to {method} {origin(scheme, host, port)}"
                    f"{path} (it is sent only to {', '.join(config.hosts)}"
                    f"{_limits(config)})"
                )
            if not unbound:  # a redirect hop drops the header instead
                sent[key] = PLACEHOLDER.sub(lambda m: self._secrets[m.group(1)].value, value)
        query: list[tuple[str, str]] = []
        for name in sorted(bound):
            secret = self._secrets[name]
            if secret.config.header is not None:
                wanted = secret.config.header.lower()
                sent = {k: v for k, v in sent.items() if k.lower() != wanted}
                sent[secret.config.header] = secret.config.format.replace("{value}", secret.value)
            elif secret.config.query is not None:
                query.append((secret.config.query, secret.value))
        return HopCredentials(sent, tuple(query), bound)

    def refuse_unbound_values(
        self, bound: frozenset[str], where: str, texts: Iterable[str], body: bytes
    ) -> None:
        """Refuse a hop whose URL, header names and values (``texts``) or body holds, in
        any form, the value of a secret it is not bound to."""
        unbound = self.values.names - bound
        if not unbound:
            return
        name = self.values.carried(unbound, texts, body)
        if name is not None:
            raise SecretViolation(
                f"the request to {where} carries the value of secret {name!r}, which is not "
                "bound to it"
            )

    def describe(self, *, placeholders: bool) -> str:
        """A note for a tool's description naming the secrets (never their values);
        ``placeholders``: the tool takes headers, so the model may name any of them."""
        shown = [s for s in self._secrets.values() if placeholders or s.config.added_by_host]
        if not shown:
            return ""
        listed = "; ".join(_entry(secret) for secret in shown)
        if placeholders:
            return (
                "Secrets: write {{secret:NAME}} in a header value and the host puts that "
                "secret there, on requests to its hosts only; its value is never shown "
                f"(a response that echoes it is redacted). Configured: {listed}."
            )
        return f"The host adds these credentials to requests to their hosts: {listed}."

    def _check_names(self, names: Iterable[str]) -> None:
        for name in names:
            if name not in self._secrets:
                known = ", ".join(sorted(self._secrets)) or "none"
                raise SecretMisuse(f"no secret named {name!r} is configured (configured: {known})")


def origin(scheme: str, host: str, port: int) -> str:
    """``scheme://host:port``, an IPv6 host in brackets."""
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


def _entry(secret: Secret) -> str:
    config = secret.config
    how = ""
    if config.header is not None:
        how = f", added as the {config.header} header"
    elif config.query is not None:
        how = f", added as the query parameter {config.query}"
    about = f": {config.description}" if config.description else ""
    return f"{secret.name} ({', '.join(config.hosts)}{_limits(config)}{how}){about}"


def _limits(config: SecretConfig) -> str:
    parts = []
    if config.paths:
        parts.append("paths " + ", ".join(config.paths))
    if config.methods:
        parts.append("methods " + ", ".join(config.methods))
    parts.append("over " + ", ".join(config.schemes))
    return "; " + "; ".join(parts)


def _read_file(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise ConfigError(f"cannot open {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path} is not a regular file")
        if info.st_mode & 0o022:
            raise ConfigError(f"{path} is writable by group or others (chmod go-w {path})")
        chunks, size = [], 0
        while chunk := os.read(fd, MAX_FILE_BYTES + 1 - size):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_FILE_BYTES:
                raise ConfigError(f"{path} is larger than {MAX_FILE_BYTES} bytes")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    try:
        text = b"".join(chunks).decode("ascii")
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not ASCII text") from None
    return text.removesuffix("\n").removesuffix("\r")


def _check_value(value: str) -> None:
    """Refuse a value that cannot be sent or redacted safely, without repeating it."""
    if not (value.isascii() and value.isprintable()):
        raise ConfigError("the value holds a character that is not printable ASCII")
    if value != value.strip():
        raise ConfigError("the value starts or ends with a space")
    if len(value) < MIN_VALUE_CHARS:
        raise ConfigError(f"the value is shorter than {MIN_VALUE_CHARS} characters")
