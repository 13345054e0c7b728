"""Where tools may send network requests: the ``[egress]`` section and its verdicts.

Two checks, at two moments, both of which every request and every redirect hop passes:

* :meth:`EgressPolicy.check_target` looks at the scheme, host and port the HTTP client
  parsed out of the URL (the same parse it connects with, so the policy and the client
  cannot disagree about what the host is): allowed schemes, the host's syntax (a DNS name
  or a canonical IP literal, :mod:`._hosts`), cloud metadata host names, the host deny
  list and allow list. Nothing is looked up before this check passes.
* :meth:`EgressPolicy.check_address` looks at each IP address the client is about to
  connect to, after DNS. Private-address blocking lives here, so a public name that
  resolves to ``127.0.0.1`` (or is rebound to it between two lookups) is refused at the
  moment it would matter.

Non-public destinations (loopback, private, link-local, CGNAT, ULA, ...) and cloud
metadata services (:mod:`._cloud_metadata`, public addresses among them) are refused while
``block_private`` is on (the default). ``private_exceptions`` opens chosen ones again: an
IP, ``IP:port``, ``[IPv6]:port`` or CIDR; a metadata service's address only when an entry
names that exact address, never through a CIDR around it.

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

import functools
import ipaddress
from collections.abc import Iterable
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from ._addresses import blocked_reason, embedded_v4, parse_address
from ._cloud_metadata import IPAddress, metadata_host, metadata_service
from ._hosts import host_problem

MAX_HOST_CHARS = 253
"""Longest host a URL may name (a DNS name's limit)."""


class EgressViolation(ValueError):
    """A request or redirect the egress policy refuses."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@functools.lru_cache(maxsize=256)
def parse_private_exception(entry: str) -> tuple[Network, int | None]:
    """``entry`` as a network and an optional port; ``ValueError`` says what is wrong."""
    host, port_text = entry, None
    if entry.startswith("["):
        host, closed, rest = entry[1:].partition("]")
        if not closed:
            raise ValueError(f"{entry!r}: a '[' without its ']'")
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"{entry!r}: expected ':PORT' after ']'")
            port_text = rest[1:]
    elif entry.count(":") == 1:
        host, _, port_text = entry.partition(":")
    try:
        network = ipaddress.ip_network(host, strict=False)
    except ValueError:
        raise ValueError(
            f"{entry!r} is not an IP, IP:port, [IPv6]:port or CIDR (host names are not allowed)"
        ) from None
    if port_text is None:
        return network, None
    if not port_text:
        raise ValueError(f"{entry!r}: the port after ':' is missing")
    if not (port_text.isascii() and port_text.isdigit()):
        raise ValueError(f"{entry!r}: the port {port_text!r} is not a number")
    port = int(port_text)
    if not 1 <= port <= 65535:
        raise ValueError(f"{entry!r}: the port {port} is outside 1-65535")
    return network, port


def _check_exception(entry: str) -> str:
    parse_private_exception(entry)
    return entry


PrivateException = Annotated[str, AfterValidator(_check_exception)]


class EgressRules(_Section):
    """The egress rules of one tool (the ``[egress]`` defaults or a per-tool override)."""

    schemes: tuple[str, ...] = ("http", "https")
    """URL schemes a request may use."""
    allow_hosts: tuple[str, ...] = ()
    """Host names a request may go to (``*.example.com`` matches subdomains); empty: any."""
    deny_hosts: tuple[str, ...] = ()
    """Host names refused even when allowed; checked first."""
    block_private: bool = True
    """Refuse loopback, private, link-local, cloud metadata, CGNAT, multicast, reserved, ULA..."""
    private_exceptions: tuple[PrivateException, ...] = ()
    """Non-public destinations allowed anyway: ``IP:port``, ``[IPv6]:port``, an IP or a CIDR
    (a cloud metadata address only when named exactly)."""
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
        if self.base_url is not None:
            try:
                url = urlsplit(self.base_url)
                url.port  # noqa: B018 - raises for a port out of range
            except ValueError as exc:
                raise ValueError(f"base_url {self.base_url!r}: {exc}") from None
            if url.scheme not in ("http", "https") or not url.hostname:
                raise ValueError(f"base_url {self.base_url!r} is not an http(s) URL")
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
        """Refuse a URL's scheme, host or port before anything is resolved or connected.

        ``host`` is the host as the client will resolve it (IDNA-encoded).
        """
        rules = self.rules_for(tool)
        if scheme not in rules.schemes:
            allowed = ", ".join(rules.schemes)
            raise EgressViolation(f"scheme {scheme!r} is not allowed (allowed: {allowed})")
        self.check_host(host)
        if port is not None and not 1 <= port <= 65535:
            raise EgressViolation(f"port {port} is outside 1-65535")
        names = _name_forms(host)
        if rules.block_private:
            service = next(filter(None, map(metadata_host, names)), None)
            if service is not None:
                raise EgressViolation(
                    f"host {host!r} is a cloud metadata service ({service}); it is blocked"
                )
        if any(host_matches(name, rules.deny_hosts) for name in names):
            raise EgressViolation(f"host {host!r} is on the egress deny list")
        if rules.allow_hosts and not any(host_matches(name, rules.allow_hosts) for name in names):
            raise EgressViolation(f"host {host!r} is not on the egress allow list")
        literal = parse_address(host)
        if literal is not None:
            self.check_address(tool, literal, port)

    def check_host(self, host: str) -> None:
        """Refuse a host that is neither a DNS name nor a canonical IP literal (no lookup)."""
        if not host:
            raise EgressViolation("the URL has no host")
        if len(host) > MAX_HOST_CHARS:  # refused before any message quotes it
            raise EgressViolation(
                f"the URL's host is {len(host):,} characters long; a host name has at most "
                f"{MAX_HOST_CHARS}"
            )
        problem = host_problem(host)
        if problem is not None:
            raise EgressViolation(
                f"host {host!r} is neither a DNS name nor an IP address in canonical form: "
                f"{problem}"
            )

    def check_address(self, tool: str, address: IPAddress, port: int | None) -> None:
        """Refuse connecting to ``address``:``port`` if it is non-public and not excepted."""
        rules = self.rules_for(tool)
        if not rules.block_private:
            return
        why = blocked_reason(address)
        if why is None:
            return
        metadata = _is_metadata(address)
        for network, allowed_port in map(parse_private_exception, rules.private_exceptions):
            if address not in network or allowed_port not in (None, port):
                continue
            if metadata and network.num_addresses != 1:
                continue  # only an entry naming the metadata address itself opens it
            return
        kind = "cloud metadata services" if metadata else "private destinations"
        raise EgressViolation(f"{address} is {why}; {kind} are blocked")


def _is_metadata(address: IPAddress) -> bool:
    if metadata_service(address) is not None:
        return True
    if isinstance(address, ipaddress.IPv6Address):
        inner = address.ipv4_mapped or embedded_v4(address)
        return inner is not None and metadata_service(inner) is not None
    return False


def _name_forms(host: str) -> tuple[str, ...]:
    """``host`` as sent (A-labels) and, for internationalised names, in Unicode too."""
    if "xn--" not in host:
        return (host,)
    try:
        return host, host.encode("ascii").decode("idna")
    except UnicodeError:
        return (host,)
