"""Which IP addresses a tool may never connect to, and why.

:func:`blocked_reason` is the classifier behind private-address blocking. It is applied to
the address a connection is actually opened to (after DNS), never to URL text, so every
spelling of an address -- decimal, hex, octal, short forms, IPv6 embeddings -- ends up here
as one :class:`ipaddress.IPv4Address` or :class:`~ipaddress.IPv6Address`.

IPv6 addresses that carry an IPv4 address inside (IPv4-mapped, IPv4-compatible, NAT64,
6to4, Teredo) are judged by the embedded address too: ``::ffff:127.0.0.1`` reaches
loopback on a dual-stack socket, and a NAT64 gateway would forward ``64:ff9b::a9fe:a9fe``
to the cloud metadata service.

Cloud metadata and platform services (:mod:`._cloud_metadata`) are named first, whether or
not their address lies in one of the ranges below -- Azure's 168.63.129.16 does not.
"""

from __future__ import annotations

import ipaddress

from ._cloud_metadata import IPAddress, metadata_service

_V4: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "unspecified or 'this network'"),
    ("10.0.0.0/8", "private (RFC 1918)"),
    ("100.64.0.0/10", "carrier-grade NAT (RFC 6598)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local (incl. cloud metadata 169.254.169.254)"),
    ("172.16.0.0/12", "private (RFC 1918)"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation (TEST-NET-1)"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private (RFC 1918)"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation (TEST-NET-2)"),
    ("203.0.113.0/24", "documentation (TEST-NET-3)"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),  # before 240/4, which contains it
    ("240.0.0.0/4", "reserved"),
)

_V6: tuple[tuple[str, str], ...] = (
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("100::/64", "discard-only"),
    ("2001:db8::/32", "documentation"),
    ("2001:10::/28", "ORCHID"),
    ("2001:20::/28", "ORCHIDv2"),
    ("2001:2::/48", "benchmarking"),
    ("3fff::/20", "documentation"),
    ("5f00::/16", "segment routing SIDs"),
    ("fc00::/7", "unique-local (ULA)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local (deprecated)"),
    ("ff00::/8", "multicast"),
)

_V4_NETS = tuple((ipaddress.IPv4Network(n), why) for n, why in _V4)
_V6_NETS = tuple((ipaddress.IPv6Network(n), why) for n, why in _V6)
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_COMPAT = ipaddress.IPv6Network("::/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_6TO4 = ipaddress.IPv6Network("2002::/16")
_TEREDO = ipaddress.IPv6Network("2001::/32")
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")


def blocked_reason(address: IPAddress) -> str | None:
    """Why ``address`` counts as non-public, or ``None`` for a public unicast address."""
    service = metadata_service(address)
    if service is not None:
        return f"a cloud metadata service ({service.service})"
    if isinstance(address, ipaddress.IPv4Address):
        for net, why in _V4_NETS:
            if address in net:
                return why
        return None
    if address.scope_id is not None:
        return "scoped IPv6 address"
    for net6, why in _V6_NETS:
        if address in net6:
            return why
    if address in _MAPPED or address in _TRANSLATED:
        return "IPv4-mapped IPv6 address"
    if address in _COMPAT:
        return "IPv4-compatible IPv6 address (deprecated)"
    embedded = embedded_v4(address)
    if embedded is not None:
        inner = blocked_reason(embedded)
        if inner is not None:
            return f"{inner} embedded in IPv6 {address}"
    if address in _NAT64_LOCAL:
        return "local-use NAT64 (RFC 8215)"
    return None


def embedded_v4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a NAT64, 6to4 or Teredo address carries, if it is one of those."""
    packed = address.packed
    if address in _NAT64:
        return ipaddress.IPv4Address(packed[12:])
    if address in _6TO4:
        return ipaddress.IPv4Address(packed[2:6])
    if address in _TEREDO:
        return ipaddress.IPv4Address(bytes(b ^ 0xFF for b in packed[12:]))
    return None


def parse_address(text: str) -> IPAddress | None:
    """``text`` as an IP address (IPv6 may be bracketed), or ``None`` if it is a name."""
    text = text.strip("[]")
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None
