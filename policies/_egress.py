"""Where tools may send network requests: the ``[egress]`` section and its verdicts.

Two checks, at two moments, both of which every request and every redirect hop passes:

* :meth:`EgressPolicy.check_target` looks at the scheme, host and port the HTTP client
  parsed out of the URL (the same parse it connects with, so the policy and the client
  cannot disagree about what the host is): allowed schemes, host deny list, host allow list.
* :meth:`EgressPolicy.check_address` looks at each IP address the client is about to
  connect to, after DNS. Private-address blocking lives here, so a public name that
  resolves to ``127.0.0.1`` (or is rebound to it between two lookups) is refused at the
  moment it would matter.

Config::

    [egress]
    allow_hosts = ["*.example.com", "api.github.com"]   # empty: any public host
    deny_hosts = ["*.internal"]
    max_redirects = 5

    [egress.tools.web_fetch]           # overrides only the keys it names
    max_response_bytes = 2_000_000

    [egress.web_search]
    provider = "searxng"
    base_url = "https://search.example.com"

    [egress.grants]                    # restrict a tool's host bindings (default: its `needs`)
    http_request = []

Both checks raise :class:`EgressViolation`; the runtime side turns it into a
``permission_denied`` result.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._addresses import IPAddress, blocked_reason, parse_address


class EgressViolation(ValueError):
    """A request or redirect the egress policy refuses."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EgressRules(_Section):
    """The egress rules of one tool (the ``[egress]`` defaults or a per-tool override)."""

    schemes: tuple[str, ...] = ("http", "https")
    """URL schemes a request may use."""
    allow_hosts: tuple[str, ...] = ()
    """Host names a request may go to (``*.example.com`` matches subdomains); empty: any."""
    deny_hosts: tuple[str, ...] = ()
    """Host names refused even when allowed; checked first."""
    block_private: bool = True
    """Refuse loopback, private, link-local, metadata, CGNAT, multicast, reserved, ULA, ..."""
    private_exceptions: tuple[str, ...] = ()
    """Non-public destinations allowed anyway: ``IP:port``, ``[IPv6]:port``, an IP or a CIDR."""
    max_redirects: int = Field(5, ge=0, le=20)
    """Redirects followed per request; one more is an error."""
    max_request_bytes: int = Field(1024 * 1024, gt=0)
    """Largest request body."""
    max_response_bytes: int = Field(5 * 1024 * 1024, gt=0)
    """Response bodies are cut at this many bytes (the original size is reported)."""
    connect_timeout: float = Field(10.0, gt=0)
    """Seconds to open a connection (never past the call's deadline)."""
    read_timeout: float = Field(30.0, gt=0)
    """Seconds to wait for each read (never past the call's deadline)."""

    @model_validator(mode="after")
    def _check_entries(self) -> EgressRules:
        for scheme in self.schemes:
            if scheme not in ("http", "https"):
                raise ValueError(f"schemes: only http and https are supported (got {scheme!r})")
        for entry in self.private_exceptions:
            _parse_exception(entry)
        return self


class WebSearchConfig(_Section):
    """The search provider behind ``web_search``; none configured means the tool says so."""

    provider: Literal["searxng", "brave"] | None = None
    base_url: str | None = None
    """SearXNG instance root, or the Brave API endpoint (default: the public one)."""
    api_key: str | None = None
    """Brave subscription token."""
    max_results: int = Field(8, gt=0, le=50)

    @model_validator(mode="after")
    def _check_provider(self) -> WebSearchConfig:
        if self.provider == "searxng" and not self.base_url:
            raise ValueError("provider 'searxng' needs base_url")
        if self.provider == "brave" and not self.api_key:
            raise ValueError("provider 'brave' needs api_key")
        return self

    def endpoint(self) -> str | None:
        """The URL to query, or ``None`` when no provider is configured."""
        if self.provider == "brave":
            return self.base_url or "https://api.search.brave.com/res/v1/web/search"
        if self.provider == "searxng" and self.base_url:
            return self.base_url.rstrip("/") + "/search"
        return None


class EgressConfig(EgressRules):
    """The ``[egress]`` section: default rules, per-tool overrides, search, binding grants."""

    tools: dict[str, EgressRules] = {}
    """``[egress.tools.NAME]``: replaces only the keys it sets."""
    web_search: WebSearchConfig = WebSearchConfig()
    grants: dict[str, tuple[str, ...]] = {}
    """``NAME = [...]``: the host bindings tool NAME may have, at most (default: its ``needs``)."""


_ExceptionEntry = tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, int | None]


def _parse_exception(entry: str) -> _ExceptionEntry:
    host, port = entry, None
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        if rest:
            port = int(rest.removeprefix(":"))
    elif entry.count(":") == 1:
        host, _, port_text = entry.partition(":")
        port = int(port_text)
    try:
        return ipaddress.ip_network(host, strict=False), port
    except ValueError:
        raise ValueError(f"private_exceptions: not an IP, IP:port or CIDR: {entry!r}") from None


def host_matches(host: str, patterns: Iterable[str]) -> bool:
    """Whether ``host`` matches one of ``patterns`` (exact, ``*.suffix`` or ``*``)."""
    host = host.lower().rstrip(".")
    for pattern in patterns:
        pattern = pattern.lower().rstrip(".")
        if pattern == "*" or host == pattern:
            return True
        if pattern.startswith("*.") and host.endswith(pattern[1:]):
            return True
    return False


class EgressPolicy:
    """Verdicts on network destinations, per tool.

    >>> policy = EgressPolicy(EgressConfig())
    >>> policy.check_target("http_request", "http", "localhost", 80)  # a name: fine for now
    >>> policy.check_address("http_request", parse_address("127.0.0.1"), 80)
    Traceback (most recent call last):
    ...
    toolcage.policies._egress.EgressViolation: 127.0.0.1 is loopback; private destinations ...
    """

    def __init__(self, config: EgressConfig) -> None:
        self._config = config
        self._default = EgressRules(
            **{name: getattr(config, name) for name in EgressRules.model_fields}
        )

    @property
    def web_search(self) -> WebSearchConfig:
        return self._config.web_search

    def rules_for(self, tool: str) -> EgressRules:
        """The default rules with ``[egress.tools.TOOL]`` laid over them."""
        override = self._config.tools.get(tool)
        if override is None:
            return self._default
        update = {name: getattr(override, name) for name in override.model_fields_set}
        return self._default.model_copy(update=update)

    def granted_bindings(self, tool: str, needs: Iterable[str]) -> frozenset[str]:
        """The host bindings ``tool`` gets: what it declares, cut down by ``[egress.grants]``."""
        wanted = frozenset(needs)
        limit = self._config.grants.get(tool)
        return wanted if limit is None else wanted & frozenset(limit)

    def check_target(self, tool: str, scheme: str, host: str, port: int | None) -> None:
        """Refuse a URL's scheme or host before anything is resolved or connected."""
        rules = self.rules_for(tool)
        if scheme not in rules.schemes:
            allowed = ", ".join(rules.schemes)
            raise EgressViolation(f"scheme {scheme!r} is not allowed (allowed: {allowed})")
        if not host:
            raise EgressViolation("the URL has no host")
        if host_matches(host, rules.deny_hosts):
            raise EgressViolation(f"host {host!r} is on the egress deny list")
        if rules.allow_hosts and not host_matches(host, rules.allow_hosts):
            raise EgressViolation(f"host {host!r} is not on the egress allow list")
        literal = parse_address(host)
        if literal is not None:
            self.check_address(tool, literal, port)

    def check_address(self, tool: str, address: IPAddress, port: int | None) -> None:
        """Refuse connecting to ``address``:``port`` if it is non-public and not excepted."""
        rules = self.rules_for(tool)
        if not rules.block_private:
            return
        why = blocked_reason(address)
        if why is None:
            return
        for network, allowed_port in map(_parse_exception, rules.private_exceptions):
            if address in network and (allowed_port is None or allowed_port == port):
                return
        raise EgressViolation(f"{address} is {why}; private destinations are blocked")
