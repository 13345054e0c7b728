"""Which URL hosts are well-formed: a DNS name, or an IP literal in its one canonical form.

The host is judged as the HTTP client will send it to the resolver (IDNA-encoded, lower
case), before any lookup. Anything else -- an IPv4 address with a trailing dot, a numeric
host beyond 32 bits, octal, hex or short IPv4 forms, percent signs, spaces, empty labels,
labels over 63 characters, broken ``xn--`` labels, IPv6 zone indexes -- is refused here, so
no resolver ever sees a string chosen to be read differently by two parsers.

The rule for numbers follows the WHATWG URL standard: a host whose last label is a number
(digits, or ``0x`` and hex digits) is an IPv4 address and nothing else. Here it must then
be the dotted-quad form that :mod:`ipaddress` prints -- four decimal parts, no leading
zeros -- which every resolver and every URL parser reads as the same address.

>>> host_problem("example.com.") is None
True
>>> host_problem("127.0.0.1.")[:36]
'a host ending in a number is an IPv4'
"""

from __future__ import annotations

import ipaddress
import string

MAX_NAME = 253
MAX_LABEL = 63
_LABEL_CHARS = frozenset(string.ascii_lowercase + string.digits + "-_")
_LABEL_ENDS = frozenset(string.ascii_lowercase + string.digits)
_HEX = frozenset(string.hexdigits)


def host_problem(host: str) -> str | None:
    """Why ``host`` is neither a DNS name nor a canonical IP literal; ``None`` if it is one.

    ``host`` may be bracketed when it is IPv6; a name may end in one dot (a fully qualified
    name). Case does not matter.
    """
    if not host:
        return "it is empty"
    if not host.isascii():
        return "it is not ASCII (an internationalised name must be IDNA-encoded)"
    host = host.lower()
    if host.startswith("[") or ":" in host:
        return _ipv6_problem(host)
    name = host.removesuffix(".")
    labels = name.split(".")
    if _is_number(labels[-1]):
        if host == name and _is_dotted_quad(name):
            return None
        return (
            "a host ending in a number is an IPv4 address, written as four decimal parts "
            "without leading zeros or a trailing dot"
        )
    if len(name) > MAX_NAME:
        return f"a name longer than {MAX_NAME} characters"
    for label in labels:
        problem = _label_problem(label)
        if problem is not None:
            return problem
    return None


def _ipv6_problem(host: str) -> str | None:
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if "%" in text:
        return "an IPv6 zone index names a local interface"
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return "not a valid IPv6 address"
    return None


def _is_number(label: str) -> bool:
    if label[:2] == "0x":
        return all(c in _HEX for c in label[2:])
    return label.isdigit()  # ASCII, checked above


def _is_dotted_quad(name: str) -> bool:
    try:
        return str(ipaddress.IPv4Address(name)) == name
    except ValueError:
        return False


def _label_problem(label: str) -> str | None:
    if not label:
        return "an empty label (two dots, or a leading dot)"
    if len(label) > MAX_LABEL:
        return f"a label longer than {MAX_LABEL} characters"
    if not set(label) <= _LABEL_CHARS:
        bad = next(c for c in label if c not in _LABEL_CHARS)
        return f"the character {bad!r} (names use letters, digits, '-' and '_')"
    if label[0] not in _LABEL_ENDS or label[-1] not in _LABEL_ENDS:
        return f"the label {label!r} must start and end with a letter or digit"
    if label.startswith("xn--"):
        try:
            decoded = label[4:].encode("ascii").decode("punycode")
        except UnicodeError:
            return f"the label {label!r} is not valid punycode"
        if decoded.isascii() or not all(c.isprintable() and not c.isspace() for c in decoded):
            return f"the label {label!r} is not a valid internationalised label"
    return None
