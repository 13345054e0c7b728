"""``[secrets.*]``: parsing, host patterns, the per-hop verdicts and the redaction forms."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest
from toolcage.policies import (
    ConfigError,
    HopCredentials,
    SecretConfig,
    SecretMisuse,
    SecretPolicy,
)
from toolcage.policies._config import parse_config
from toolcage.policies._secrets import HostPattern

VALUE = "abc/DEF+ghi=jkl 012"


def _config(**entry: Any) -> SecretConfig:
    return SecretConfig(**{"from_env": "TOKEN", "hosts": ["api.example.com"], **entry})


def _policy(**entry: Any) -> SecretPolicy:
    config = parse_config({"secrets": {"api": {"from_env": "T", **entry}}}, base_dir=Path("."))
    return SecretPolicy.load(config.secrets, Path("."), {"T": "token-12345678"})


class TestHostPatterns:
    @pytest.mark.parametrize(
        ("pattern", "scheme", "host", "port", "matches"),
        [
            ("api.example.com", "https", "api.example.com", 443, True),
            ("api.example.com", "https", "API.Example.com.", 443, True),
            ("api.example.com", "https", "api.example.com", 8443, False),
            ("api.example.com", "http", "api.example.com", 80, True),
            ("api.example.com", "http", "api.example.com", 443, False),
            ("api.example.com", "https", "evil-api.example.com", 443, False),
            ("api.example.com", "https", "api.example.com.evil.com", 443, False),
            ("*.example.com", "https", "a.b.example.com", 443, True),
            ("*.example.com", "https", "example.com", 443, False),
            ("*.example.com", "https", "badexample.com", 443, False),
            ("api.example.com:8443", "https", "api.example.com", 8443, True),
            ("api.example.com:8443", "https", "api.example.com", 443, False),
            ("127.0.0.1:8080", "http", "127.0.0.1", 8080, True),
            ("[::1]:8080", "http", "::1", 8080, True),
            ("[::1]", "https", "::1", 443, True),
        ],
    )
    def test_matching(self, pattern: str, scheme: str, host: str, port: int, matches: bool) -> None:
        assert HostPattern.parse(pattern).matches(scheme, host, port) is matches

    @pytest.mark.parametrize(
        "pattern",
        ["*", "*.com", "a.*.com", "ex ample.com", "::1", "[::1", "host:0", "host:x", "127.1", ""],
    )
    def test_refused(self, pattern: str) -> None:
        with pytest.raises(ValueError, match="host"):
            HostPattern.parse(pattern)


class TestConfig:
    @pytest.mark.parametrize(
        ("entry", "problem"),
        [
            ({"from_file": "x"}, "exactly one of from_env and from_file"),
            ({"from_env": None}, "exactly one of from_env and from_file"),
            ({"hosts": []}, "at least 1 item"),
            ({"paths": ["api"]}, "must start with '/'"),
            ({"header": "A", "query": "k"}, "header or query, not both"),
            ({"header": "Content-Length"}, "not a header the host may set"),
            ({"header": "Bad Name"}, "not a header the host may set"),
            ({"format": "Bearer"}, "'{value}' exactly once"),
            ({"methods": ["TRACE"]}, "methods.0"),
            ({"schemes": ["ftp"]}, "schemes.0"),
            ({"from_env": "1BAD"}, "from_env"),
        ],
    )
    def test_refused_with_its_key(self, entry: dict[str, Any], problem: str) -> None:
        raw = {"secrets": {"api": {"from_env": "T", "hosts": ["api.example.com"], **entry}}}
        with pytest.raises(ConfigError, match="secrets") as info:
            parse_config(raw, base_dir=Path("."))
        assert problem in str(info.value)

    def test_a_bad_name_is_refused(self) -> None:
        raw = {"secrets": {"a b": {"from_env": "T", "hosts": ["api.example.com"]}}}
        with pytest.raises(ConfigError, match="'a b' is not a secret name"):
            parse_config(raw, base_dir=Path("."))

    def test_an_empty_variable_is_unset(self) -> None:
        config = parse_config(
            {"secrets": {"api": {"from_env": "T", "hosts": ["x.example.com"]}}}, base_dir=Path(".")
        )
        with pytest.raises(
            ConfigError, match=r"secrets\.api\.from_env: the environment variable T"
        ):
            SecretPolicy.load(config.secrets, Path("."), {"T": ""})


class TestHops:
    def _hop(
        self,
        policy: SecretPolicy,
        headers: dict[str, str],
        *,
        scheme: str = "https",
        host: str = "api.example.com",
        port: int = 443,
        downgraded: bool = False,
    ) -> HopCredentials:
        return policy.for_hop(
            "GET", scheme, host, port, "/", headers, first_hop=False, downgraded=downgraded
        )

    def test_a_redirect_hop_drops_an_unbound_placeholder_header(self) -> None:
        policy = _policy(hosts=["api.example.com"])
        hop = self._hop(policy, {"X-Key": "{{secret:api}}", "Accept": "*/*"}, host="other.com")
        assert hop.headers == {"Accept": "*/*"}
        assert hop.bound == frozenset()

    def test_a_downgraded_hop_carries_nothing(self) -> None:
        policy = _policy(hosts=["api.example.com"], schemes=["https", "http"], header="X-Key")
        hop = self._hop(policy, {}, scheme="http", port=80, downgraded=True)
        assert hop.headers == {}
        assert "token" not in repr(hop)

    def test_an_unknown_name_is_misuse_even_on_a_redirect_hop(self) -> None:
        with pytest.raises(SecretMisuse, match="no secret named 'nope'"):
            self._hop(_policy(hosts=["api.example.com"]), {"X": "{{secret:nope}}"})


class TestRedactionForms:
    def test_every_form_is_found(self) -> None:
        policy = SecretPolicy.load(
            {"api": _config()}, Path("."), {"TOKEN": VALUE.replace(" ", "-")}
        )
        value = VALUE.replace(" ", "-")
        redactor = policy.values
        forms = [
            value,
            quote_plus(value, safe=""),
            *(
                base64.b64encode(p.encode() + value.encode() + b"!").decode()
                for p in ("", "a", "ab")
            ),
            base64.urlsafe_b64encode(b"user:" + value.encode()).decode(),
            re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote_plus(value, safe="")),
            json.dumps(value)[1:-1].replace("/", "\\/"),
        ]
        for form in forms:
            text = redactor.text(f"<{form}>")
            assert "[redacted secret api]" in text, form
            assert value not in text
            assert redactor.data(f"<{form}>".encode()) == text.encode()
