"""The egress policy: address classification, host lists, per-tool rules, config errors."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from toolcage.policies import (
    ConfigError,
    EgressConfig,
    EgressPolicy,
    EgressRules,
    EgressViolation,
    WebSearchConfig,
    blocked_reason,
    load_config,
)

BLOCKED = {
    "127.0.0.1": "loopback",
    "127.255.255.254": "loopback",
    "0.0.0.0": "unspecified",  # noqa: S104 -- an address under test, not a bind
    "10.1.2.3": "private",
    "172.16.0.1": "private",
    "172.31.255.255": "private",
    "192.168.0.1": "private",
    "169.254.169.254": "metadata",
    "100.64.0.1": "carrier-grade NAT",
    "100.127.255.255": "carrier-grade NAT",
    "224.0.0.251": "multicast",
    "255.255.255.255": "broadcast",
    "240.0.0.1": "reserved",
    "192.0.2.10": "documentation",
    "198.18.5.5": "benchmarking",
    "::1": "loopback",
    "::": "unspecified",
    "fe80::1": "link-local",
    "fd12:3456::1": "unique-local",
    "fc00::1": "unique-local",
    "ff02::1": "multicast",
    "::ffff:127.0.0.1": "IPv4-mapped",
    "::ffff:8.8.8.8": "IPv4-mapped",
    "::127.0.0.1": "IPv4-compatible",
    "64:ff9b::a9fe:a9fe": "metadata",
    "64:ff9b::7f00:1": "loopback",
    "64:ff9b:1::1": "NAT64",
    "2002:7f00:1::1": "loopback",
    "2002:c0a8:101::": "private",
    "2001:0:4136:e378:8000:63bf:80ff:fffe": "loopback",  # Teredo, client 127.0.0.1
    "2001:db8::1": "documentation",
    "fec0::1": "site-local",
}

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "100.63.255.255",
    "100.128.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "2606:4700:4700::1111",
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8
    "2002:808:808::1",  # 6to4 of 8.8.8.8
]


class TestBlockedReason:
    @pytest.mark.parametrize(("address", "why"), BLOCKED.items())
    def test_non_public(self, address: str, why: str) -> None:
        reason = blocked_reason(ipaddress.ip_address(address))
        assert reason is not None
        assert why in reason

    @pytest.mark.parametrize("address", PUBLIC)
    def test_public(self, address: str) -> None:
        assert blocked_reason(ipaddress.ip_address(address)) is None


def _policy(**rules: object) -> EgressPolicy:
    return EgressPolicy(EgressConfig.model_validate(rules))


class TestCheckTarget:
    def test_schemes(self) -> None:
        _policy().check_target("t", "https", "example.com", 443)
        with pytest.raises(EgressViolation, match="scheme 'ftp'"):
            _policy().check_target("t", "ftp", "example.com", 21)
        with pytest.raises(EgressViolation, match="scheme 'http'"):
            _policy(schemes=["https"]).check_target("t", "http", "example.com", 80)

    def test_allow_list_with_wildcards(self) -> None:
        policy = _policy(allow_hosts=["*.example.com", "api.github.com"])
        policy.check_target("t", "https", "a.b.example.com", 443)
        policy.check_target("t", "https", "API.GitHub.com.", 443)
        with pytest.raises(EgressViolation, match="allow list"):
            policy.check_target("t", "https", "example.com", 443)  # apex is not a subdomain
        with pytest.raises(EgressViolation, match="allow list"):
            policy.check_target("t", "https", "evilexample.com", 443)

    def test_deny_list_wins(self) -> None:
        policy = _policy(allow_hosts=["*"], deny_hosts=["*.internal"])
        with pytest.raises(EgressViolation, match="deny list"):
            policy.check_target("t", "https", "db.corp.internal", 443)

    def test_ip_literal_is_checked_immediately(self) -> None:
        with pytest.raises(EgressViolation, match="loopback"):
            _policy().check_target("t", "http", "127.0.0.1", 80)

    def test_empty_host(self) -> None:
        with pytest.raises(EgressViolation, match="no host"):
            _policy().check_target("t", "http", "", 80)


class TestPrivateExceptions:
    def test_exact_ip_and_port(self) -> None:
        policy = _policy(private_exceptions=["127.0.0.1:8080", "[::1]:9000", "10.0.0.0/8"])
        policy.check_address("t", ipaddress.ip_address("127.0.0.1"), 8080)
        policy.check_address("t", ipaddress.ip_address("::1"), 9000)
        policy.check_address("t", ipaddress.ip_address("10.9.9.9"), 1)
        with pytest.raises(EgressViolation):
            policy.check_address("t", ipaddress.ip_address("127.0.0.1"), 8081)
        with pytest.raises(EgressViolation):
            policy.check_address("t", ipaddress.ip_address("127.0.0.2"), 8080)

    def test_block_private_off(self) -> None:
        _policy(block_private=False).check_address("t", ipaddress.ip_address("10.0.0.1"), 80)

    def test_bad_entry_is_a_config_error(self) -> None:
        with pytest.raises(ValueError, match="private_exceptions"):
            EgressConfig(private_exceptions=("localhost:80",))


class TestPerTool:
    def test_override_replaces_only_its_keys(self) -> None:
        config = EgressConfig(
            deny_hosts=("*.internal",),
            max_redirects=2,
            tools={"web_fetch": EgressRules(max_response_bytes=10)},
        )
        rules = EgressPolicy(config).rules_for("web_fetch")
        assert rules.max_response_bytes == 10
        assert rules.deny_hosts == ("*.internal",)
        assert rules.max_redirects == 2
        assert EgressPolicy(config).rules_for("other").max_response_bytes == 5 * 1024 * 1024

    def test_grants(self) -> None:
        policy = EgressPolicy(EgressConfig(grants={"a": ("clock",)}))
        assert policy.granted_bindings("a", ["clock", "http"]) == {"clock"}
        assert policy.granted_bindings("b", ["clock", "http"]) == {"clock", "http"}


class TestConfigFile:
    def test_full_section(self, tmp_path: Path) -> None:
        path = tmp_path / "toolcage.toml"
        path.write_text(
            """
[egress]
allow_hosts = ["*.example.com"]
max_redirects = 3

[egress.tools.web_fetch]
max_response_bytes = 2000

[egress.web_search]
provider = "searxng"
base_url = "https://search.example.com/"

[egress.grants]
http_request = []
""",
            encoding="utf-8",
        )
        config = load_config(path)
        policy = EgressPolicy(config.egress)
        assert policy.rules_for("web_fetch").max_response_bytes == 2000
        assert policy.rules_for("web_fetch").max_redirects == 3
        assert policy.web_search.endpoint() == "https://search.example.com/search"
        assert policy.granted_bindings("http_request", ["http"]) == frozenset()

    @pytest.mark.parametrize(
        ("text", "where"),
        [
            ("[egress]\nschemes = ['gopher']", "egress"),
            ("[egress]\nmax_redirects = -1", "egress.max_redirects"),
            ("[egress]\nallow_host = []", "egress.allow_host: unknown key"),
            ("[egress.web_search]\nprovider = 'brave'", "api_key"),
            ("[egress.web_search]\nprovider = 'bing'", "egress.web_search.provider"),
        ],
    )
    def test_errors_name_the_key(self, tmp_path: Path, text: str, where: str) -> None:
        path = tmp_path / "toolcage.toml"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match=where.replace(".", r"\.")):
            load_config(path)


class TestWebSearchConfig:
    def test_unconfigured(self) -> None:
        assert WebSearchConfig().endpoint() is None

    def test_brave_default_endpoint(self) -> None:
        config = WebSearchConfig(provider="brave", api_key="k")
        assert config.endpoint() == "https://api.search.brave.com/res/v1/web/search"
