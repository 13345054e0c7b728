"""The one redactor: what every record that leaves the process passes through.

The audit log's records, the spans' attributes, the ``toolcage`` loggers' records and the
error messages of tool calls are redacted by one :class:`Redactor`, built once per runtime
from the operator's ``[audit] redact_keys`` and ``redact_patterns`` and the values of the
configured ``[secrets]``. It lives here, in ``policies``, so that the host bindings and the
runtime both reach it. Its rules, in the order they run on a string:

1. every form of a configured secret's value (:mod:`._secret_forms`) becomes
   ``[redacted secret NAME]``;
2. each match of a token shape -- bearer and basic credentials, ``sk-`` keys, GitHub,
   AWS, Slack and Google keys, JSON web tokens, private key blocks, a URL's password --
   and of each operator pattern becomes ``[REDACTED]``;
3. the value of every key that names a credential (:meth:`Redactor.is_secret_key`)
   becomes ``[REDACTED]``, wherever the pair stands in the text (:mod:`._redact_pairs`):
   ``key=value`` and ``key = value``, INI/TOML/``.env``/YAML lines and HTTP headers,
   JSON members -- in a whole document, in prose, after a byte order mark, cut short, or
   escaped inside another JSON string -- and Python ``repr``\\ s of dicts and keywords.

A value (a dict, a list, a string) is redacted by :meth:`Redactor.value`: a member whose
key names a credential is replaced whole, strings by the rules above. A string is redacted
before it is cut, so a cut never keeps part of a value a whole match would catch. A string
far longer than its cut is redacted only as far as the cut and a margin past it: every rule
decides a position from what precedes it, and a value that runs past the margin is
replaced up to it, so the kept part is redacted at least as much as a whole redaction
would; only a match the margin's end cut short is left whole, and the margin keeps it out
of the kept part (when redaction shrank the text so far that it could reach in, the whole
string is redacted after all).

Most strings name no credential key and hold no token: one lower-casing and a few
substring tests per rule let them through without a regular expression, and short strings
(reasons, messages) are remembered once redacted, since the same ones come back call after
call.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ._audit import AuditConfig
from ._redact_pairs import REDACTED, redact_pairs
from ._secret_forms import SecretValues

__all__ = ["DEFAULT_KEYS", "DEFAULT_PATTERNS", "REDACTED", "Redactor"]

DEFAULT_KEYS = (
    "password",
    "passwd",
    "pass",
    "pwd",
    "passphrase",
    "secret",
    "token",
    "auth",
    "api_key",
    "apikey",
    "authorization",
    "proxy_authorization",
    "cookie",
    "set_cookie",
    "private_key",
    "access_key",
    "secret_key",
    "client_secret",
    "credentials",
    "credential",
    "session_key",
)
"""Credential names. A key names a credential when, lower-cased, with ``-``, ``.`` and a
change of case (``accessToken``) read as ``_``, it is one of them, starts or ends with one
as a word (``access_token``, ``x_api_key``, ``secret_value``, ``GIT_PASSWORD``), or, run
together, ends with one of five letters or more (``xapikey``)."""

# Each token shape, with the text (lower case) a string must hold for the shape to be
# looked for: a membership test spares most strings every regular expression.
_SHAPES = (
    (("bearer",), r"(?i:\bbearer\s+)[A-Za-z0-9\-._~+/]+=*"),
    (("basic",), r"(?i:\bbasic\s+)[A-Za-z0-9+/]{8,}=*"),
    (("sk-",), r"\bsk-[A-Za-z0-9_\-]{16,}"),
    (("gh",), r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
    (("github_pat_",), r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    (("akia", "asia"), r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (("xox",), r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    (("aiza",), r"\bAIza[0-9A-Za-z_\-]{35}"),
    (("eyj",), r"\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*"),
    (
        ("private key",),
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
    ),
    (("://",), r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"),
)

DEFAULT_PATTERNS = tuple(pattern for _, pattern in _SHAPES)
"""Token shapes redacted wherever they appear in a string: bearer and basic credentials,
OpenAI/Anthropic ``sk-`` keys, GitHub tokens, AWS access key ids, Slack tokens, Google API
keys, JWTs, private key blocks, and the password of a URL."""
_TRIGGERED = tuple(
    (trigger, re.compile(pattern)) for triggers, pattern in _SHAPES for trigger in triggers
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_KEYS_REMEMBERED = 4096
_TEXTS_REMEMBERED = 4096
_REMEMBERED_CHARS = 256
"""Strings up to this long are remembered once redacted."""
_SUFFIX_CHARS = 5
"""A credential name this long or longer is also found at the end of a run-together key."""
_MARGIN = 4096
"""Characters past a cut that a string cut far from its end is redacted to."""
_UNSURE = 1024
"""Characters at the end of a margin where a match may have been cut short: never kept."""


class Redactor:
    """Replaces credentials in what leaves the process (see the module docstring).

    >>> redactor = Redactor(keys=["x-tenant"], secrets=policy.values)
    >>> redactor.value({"url": "https://x/?api_key=1", "headers": {"Cookie": "a=b"}})
    {'url': 'https://x/?api_key=[REDACTED]', 'headers': {'Cookie': '[REDACTED]'}}
    >>> redactor.text('password = "hunter2"')
    'password = "[REDACTED]"'
    """

    def __init__(
        self,
        keys: Iterable[str] = (),
        patterns: Iterable[str] = (),
        secrets: SecretValues | None = None,
    ) -> None:
        names = {_normal(key) for key in (*DEFAULT_KEYS, *keys)} - {""}
        self._keys = frozenset(names)
        self._compact = frozenset(name.replace("_", "") for name in names)
        self._suffixes = tuple(k for k in self._compact if len(k) >= _SUFFIX_CHARS)
        self._atoms = _atoms(names)
        self._patterns = [re.compile(pattern) for pattern in patterns]
        self._secrets = secrets if secrets else None
        self._reach = 0 if secrets is None else secrets.overlap
        self._verdicts: dict[str, bool] = {}
        self._texts: dict[str, str] = {}

    @classmethod
    def from_config(cls, audit: AuditConfig, secrets: SecretValues | None = None) -> Redactor:
        """The redactor of a runtime: the ``[audit]`` keys and patterns, the secrets' values."""
        return cls(audit.redact_keys, audit.redact_patterns, secrets)

    def is_secret_key(self, key: str) -> bool:
        """Whether ``key`` names a credential (remembered: keys repeat)."""
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._judge(key)
            if len(self._verdicts) < _KEYS_REMEMBERED:
                self._verdicts[key] = verdict
        return verdict

    def _judge(self, key: str) -> bool:
        words = [word for word in _normal(key).split("_") if word]
        for n in (1, 2):
            if "_".join(words[:n]) in self._keys or "_".join(words[-n:]) in self._keys:
                return True
        compact = "".join(words)
        return compact in self._compact or compact.endswith(self._suffixes)

    def value(self, value: Any, max_chars: int | None = None) -> Any:
        """``value`` (plain JSON: dicts, lists, strings, numbers) with every credential
        replaced, strings longer than ``max_chars`` cut after redaction."""
        if isinstance(value, str):
            return self.text(value, max_chars)
        if isinstance(value, dict):
            return {
                (self.text(key) if isinstance(key, str) else key): REDACTED
                if isinstance(key, str) and item is not None and self.is_secret_key(key)
                else self.value(item, max_chars)
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.value(item, max_chars) for item in value]
        return value

    def text(self, text: str, max_chars: int | None = None) -> str:
        """``text`` with every credential replaced, then cut to ``max_chars`` (the rest
        counted: ``…[N more characters]``)."""
        if max_chars is not None and len(text) > max_chars + _MARGIN + self._reach:
            window = self._redact(text[: max_chars + _MARGIN + self._reach])
            if len(window) >= max_chars + _UNSURE + self._reach:
                return f"{window[:max_chars]}…[{len(text) - max_chars} more characters]"
        if len(text) <= _REMEMBERED_CHARS:
            redacted = self._texts.get(text)
            if redacted is None:
                redacted = self._redact(text)
                if len(self._texts) >= _TEXTS_REMEMBERED:
                    self._texts.clear()
                self._texts[text] = redacted
        else:
            redacted = self._redact(text)
        if max_chars is None or len(redacted) <= max_chars:
            return redacted
        return f"{redacted[:max_chars]}…[{len(redacted) - max_chars} more characters]"

    def _redact(self, text: str) -> str:
        if self._secrets is not None:
            text = self._secrets.text(text)
        probe = text.lower()
        for trigger, shape in _TRIGGERED:
            if trigger in probe:
                text = shape.sub(REDACTED, text)
        for pattern in self._patterns:
            text = pattern.sub(REDACTED, text)
        if "=" in text or ":" in text:
            for atom in self._atoms:
                if atom in probe:
                    return redact_pairs(text, self.is_secret_key)
        return text


def _normal(key: str) -> str:
    """``key`` as its words joined by ``_``, lower case (``X-Api.Key``, ``xApiKey``)."""
    key = _CAMEL.sub("_", key.strip())
    return key.lower().replace("-", "_").replace(".", "_").replace(" ", "_")


def _atoms(names: Iterable[str]) -> tuple[str, ...]:
    """Words one of which every spelling of each credential name holds (lower case): a
    string holding none of them names no credential key."""
    chosen = {max(name.split("_"), key=len) for name in names}
    return tuple(sorted(a for a in chosen if not any(b != a and b in a for b in chosen)))
