"""The egress policy: address classification, host lists, per-tool rules, config errors."""

from __future__ import annotations

import ipaddress
import re
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
from toolcage.policies._cloud_metadata import METADATA_SERVICES, MetadataService, metadata_host
from toolcage.policies._hosts import host_problem

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

    @pytest.mark.parametrize(
        ("entry", "why"),
        [
            ("127.0.0.1:", "the port after ':' is missing"),
            ("127.0.0.1:0", "the port 0 is outside 1-65535"),
            ("127.0.0.1:65536", "the port 65536 is outside 1-65535"),
            ("[::1]:99999", "the port 99999 is outside 1-65535"),
            ("127.0.0.1:http", "the port 'http' is not a number"),
            ("127.0.0.1:+80", "the port '+80' is not a number"),
            ("127.0.0.1:٨٠", "is not a number"),  # Arabic-Indic digits: int() would take them
            ("[::1]", None),
            ("[::1]:", "the port after ':' is missing"),
            ("[::1]8080", "expected ':PORT' after ']'"),
            ("[::1", "a '[' without its ']'"),
            ("localhost", "host names are not allowed"),
            ("", "is not an IP"),
        ],
    )
    def test_entries_are_checked_with_a_reason(self, entry: str, why: str | None) -> None:
        if why is None:
            EgressConfig(private_exceptions=(entry,))
            return
        with pytest.raises(ValueError, match=re.escape(why)):
            EgressConfig(private_exceptions=(entry,))

    @pytest.mark.parametrize("section", ["egress", "egress.tools.web_fetch"])
    def test_a_bad_port_names_its_key_in_the_config_file(
        self, tmp_path: Path, section: str
    ) -> None:
        path = tmp_path / "toolcage.toml"
        path.write_text(
            f"[{section}]\nprivate_exceptions = ['10.0.0.1:8080', '127.0.0.1:']\n",
            encoding="utf-8",
        )
        with pytest.raises(ConfigError) as info:
            load_config(path)
        message = str(info.value)
        assert f"{section}.private_exceptions.1: '127.0.0.1:'" in message
        assert "the port after ':' is missing" in message
        assert "int()" not in message


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


VALID_HOSTS = [
    "example.com",
    "EXAMPLE.com.",
    "a-b.example",
    "my_site.example.com",
    "xn--bcher-kva.de",
    "1e3.example",
    "example.123abc",
    "8.8.8.8",
    "[2606:4700:4700::1111]",
    "2606:4700:4700::1111",
    "a" * 63 + ".com",
]

MALFORMED_HOSTS = {
    "127.0.0.1.": "ending in a number",
    "8.8.8.8.": "ending in a number",
    "2130706433": "ending in a number",
    "4294967296": "ending in a number",
    "99999999999999999999": "ending in a number",
    "0x7f000001": "ending in a number",
    "0x7f.0.0.1": "ending in a number",
    "0177.0.0.1": "ending in a number",
    "127.000.000.001": "ending in a number",
    "127.1": "ending in a number",
    "1.2.3.4.5": "ending in a number",
    "256.1.1.1": "ending in a number",
    "example.123": "ending in a number",
    "0x": "ending in a number",
    "a..b": "an empty label",
    ".example.com": "an empty label",
    "example.com..": "an empty label",
    ".": "an empty label",
    "-evil.com": "must start and end",
    "evil-.com": "must start and end",
    "_evil.com": "must start and end",
    "ev%69l.com": "the character '%'",
    "127.0.0.1%00.evil.com": "the character '%'",
    "exa mple.com": "the character ' '",
    "evil.com@127.0.0.1": "ending in a number",
    "evil.com@example": "the character '@'",
    "bücher.de": "not ASCII",
    "１２７.0.0.1": "not ASCII",
    "xn--": "must start and end",
    "xn--a": "not a valid internationalised label",
    "xn--abc-": "must start and end",
    "a" * 64 + ".com": "longer than 63",
    ("a" * 60 + ".") * 5 + "com": "longer than 253",
    "[fe80::1%25eth0]": "zone index",
    "fe80::1%eth0": "zone index",
    "[::1": "not a valid IPv6 address",
    "[1:2:3:4:5:6:7:8:9]": "not a valid IPv6 address",
    "": "empty",
}


class TestHostSyntax:
    @pytest.mark.parametrize("host", VALID_HOSTS)
    def test_dns_names_and_canonical_literals_pass(self, host: str) -> None:
        assert host_problem(host) is None
        _policy(block_private=False).check_target("t", "https", host, 443)

    @pytest.mark.parametrize(("host", "why"), MALFORMED_HOSTS.items())
    def test_anything_else_is_refused_before_a_lookup(self, host: str, why: str) -> None:
        problem = host_problem(host)
        assert problem is not None
        assert why in problem
        with pytest.raises(EgressViolation):
            _policy(block_private=False, allow_hosts=["*"]).check_target("t", "https", host, 443)

    @pytest.mark.parametrize("port", [0, -1, 65536, 10**9])
    def test_ports_outside_the_range_are_refused(self, port: int) -> None:
        with pytest.raises(EgressViolation, match="outside 1-65535"):
            _policy().check_target("t", "https", "example.com", port)

    def test_unicode_forms_of_a_name_meet_the_host_lists(self) -> None:
        policy = _policy(deny_hosts=["*.bücher.de"])
        with pytest.raises(EgressViolation, match="deny list"):
            policy.check_target("t", "https", "www.xn--bcher-kva.de", 443)


class TestCloudMetadata:
    @pytest.mark.parametrize(
        "entry", METADATA_SERVICES, ids=[str(e.address) for e in METADATA_SERVICES]
    )
    def test_every_listed_address_is_refused_and_named(self, entry: MetadataService) -> None:
        reason = blocked_reason(entry.address)
        assert reason is not None
        assert "cloud metadata" in reason
        with pytest.raises(EgressViolation, match="cloud metadata services are blocked"):
            _policy().check_address("t", entry.address, 80)

    @pytest.mark.parametrize(
        "entry", METADATA_SERVICES, ids=[str(e.address) for e in METADATA_SERVICES]
    )
    def test_every_entry_names_its_sources(self, entry: MetadataService) -> None:
        assert entry.sources
        assert all(source.startswith("https://") for source in entry.sources)

    @pytest.mark.parametrize(
        "address",
        [
            "168.63.129.16",  # Azure WireServer: a public address
            "64:ff9b::a83f:8110",  # NAT64 of it
            "2002:a83f:8110::1",  # 6to4 of it
            "64:ff9b::6464:64c8",  # NAT64 of Alibaba's 100.100.100.200
        ],
    )
    def test_public_and_embedded_forms_are_refused(self, address: str) -> None:
        with pytest.raises(EgressViolation, match="cloud metadata"):
            _policy().check_address("t", ipaddress.ip_address(address), 80)

    @pytest.mark.parametrize(
        "host",
        [
            "metadata.google.internal",
            "METADATA.Google.Internal.",
            "metadata",
            "instance-data",
            "instance-data.ec2.internal",
            "metadata.tencentyun.com",
            "metadata.platformequinix.com",
        ],
    )
    def test_names_are_refused_by_name(self, host: str) -> None:
        with pytest.raises(EgressViolation, match="cloud metadata service"):
            _policy(allow_hosts=["*"]).check_target("t", "http", host, 80)
        assert metadata_host(host) is not None

    def test_a_cidr_exception_does_not_open_a_metadata_address(self) -> None:
        policy = _policy(private_exceptions=["169.254.0.0/16", "100.64.0.0/10", "fd00::/8"])
        policy.check_address("t", ipaddress.ip_address("169.254.1.1"), 80)
        policy.check_address("t", ipaddress.ip_address("100.64.0.1"), 80)
        for address in ("169.254.169.254", "100.100.100.200", "fd00:ec2::254"):
            with pytest.raises(EgressViolation, match="cloud metadata"):
                policy.check_address("t", ipaddress.ip_address(address), 80)

    def test_an_exception_naming_the_address_opens_it(self) -> None:
        policy = _policy(private_exceptions=["169.254.169.254:80", "168.63.129.16"])
        policy.check_address("t", ipaddress.ip_address("169.254.169.254"), 80)
        policy.check_address("t", ipaddress.ip_address("168.63.129.16"), 443)
        with pytest.raises(EgressViolation):
            policy.check_address("t", ipaddress.ip_address("169.254.169.254"), 443)

    def test_block_private_off_turns_the_table_off_too(self) -> None:
        policy = _policy(block_private=False)
        policy.check_address("t", ipaddress.ip_address("168.63.129.16"), 80)
        policy.check_target("t", "http", "metadata.google.internal", 80)
