"""Secrets out of the arguments an audit record shows.

A value is replaced by ``[REDACTED]`` when its key names a credential (any case, ``-`` and
``_`` alike: ``password``, ``Authorization``, ``X-Api-Key``, ``github_token``, ...), and
within every string, each match of a token pattern (bearer tokens, ``sk-...``, GitHub,
AWS, Slack, Google keys, JWTs, private key blocks, the password of a URL) is replaced.
Strings are also read the ways secrets hide in them: a string that holds a JSON document
is redacted as that document, a line ``Name: value`` and a pair ``name=value`` are
redacted by their name. Redaction runs before a long string is cut, so a cut never
leaves part of a secret that a whole match would have caught.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[REDACTED]"

DEFAULT_KEYS = (
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "secret",
    "token",
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
"""Credential names; a key matches one when it is that name or ends or starts with it as
a word (``access_token``, ``x_api_key``, ``secret_value``), after lower-casing and
reading ``-`` as ``_``."""

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

_HEADER_LINE = re.compile(r"(?m)^([ \t]*([A-Za-z0-9_\-]+)[ \t]*:[ \t]*)([^\r\n]+)")
_PAIR = re.compile(r"([A-Za-z0-9_\-]+)=([^&;\s\"']+)")
_KEYS_REMEMBERED = 4096
_MAX_JSON_IN_STRING = 256 * 1024
"""A string longer than this is not parsed as JSON (the patterns still apply)."""


class Redactor:
    """Redacts arguments by key name and by pattern.

    >>> Redactor().redact({"url": "https://x/?api_key=1", "headers": {"Cookie": "a=b"}})
    {'url': 'https://x/?api_key=[REDACTED]', 'headers': {'Cookie': '[REDACTED]'}}
    """

    def __init__(
        self,
        extra_keys: Iterable[str] = (),
        extra_patterns: Iterable[str] = (),
        *,
        max_value_chars: int = 2048,
    ) -> None:
        self._keys = frozenset(_normal(key) for key in (*DEFAULT_KEYS, *extra_keys))
        self._extra = [re.compile(pattern) for pattern in extra_patterns]
        self._max_chars = max_value_chars
        self._verdicts: dict[str, bool] = {}

    def is_secret_key(self, key: str) -> bool:
        """Whether ``key`` names a credential (remembered: argument names repeat)."""
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._judge(key)
            if len(self._verdicts) < _KEYS_REMEMBERED:
                self._verdicts[key] = verdict
        return verdict

    def _judge(self, key: str) -> bool:
        name = _normal(key)
        if name in self._keys:
            return True
        head, _, _ = name.partition("_")
        _, _, tail = name.rpartition("_")
        return head in self._keys or tail in self._keys or _suffix_match(name, self._keys)

    def redact(self, value: Any) -> Any:
        """``value`` (plain JSON) with every secret replaced and long strings cut."""
        if isinstance(value, str):
            return self._cut(self._text(value))
        if isinstance(value, dict):
            return {
                key: REDACTED
                if isinstance(key, str) and self.is_secret_key(key) and value[key] is not None
                else self.redact(value[key])
                for key in value
            }
        if isinstance(value, list | tuple):
            return [self.redact(item) for item in value]
        return value

    def _text(self, text: str) -> str:
        stripped = text.strip()
        if stripped[:1] in ("{", "[") and len(stripped) <= _MAX_JSON_IN_STRING:
            try:
                document = json.loads(stripped)
            except (ValueError, RecursionError):
                pass
            else:
                return json.dumps(self._document(document), ensure_ascii=False)
        probe = text.lower()
        for trigger, shape in _TRIGGERED:
            if trigger in probe:
                text = shape.sub(REDACTED, text)
        for pattern in self._extra:
            text = pattern.sub(REDACTED, text)
        if ":" in text:
            text = _HEADER_LINE.sub(self._header, text)
        if "=" in text:
            text = _PAIR.sub(self._pair, text)
        return text

    def _document(self, value: Any) -> Any:
        """A JSON document found in a string: redacted, strings left whole (the string
        that held it is cut as a whole)."""
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, dict):
            return {
                key: REDACTED if self.is_secret_key(key) else self._document(item)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [self._document(item) for item in value]
        return value

    def _header(self, match: re.Match[str]) -> str:
        if self.is_secret_key(match[2]) and match[3] != REDACTED:
            return match[1] + REDACTED
        return match[0]

    def _pair(self, match: re.Match[str]) -> str:
        if self.is_secret_key(match[1]):
            return f"{match[1]}={REDACTED}"
        return match[0]

    def _cut(self, text: str) -> str:
        if len(text) <= self._max_chars:
            return text
        return f"{text[: self._max_chars]}…[{len(text) - self._max_chars} more characters]"


def _normal(key: str) -> str:
    return key.strip().lower().replace("-", "_")


def _suffix_match(name: str, keys: frozenset[str]) -> bool:
    """``x_api_key`` ends with the word ``api_key``: a key of two words at either end."""
    words = name.split("_")
    if len(words) < 3:
        return False
    return "_".join(words[-2:]) in keys or "_".join(words[:2]) in keys
