"""SSRF: every URL of ``ssrf_corpus.json`` through ``http_request`` and ``web_fetch``.

The URLs aim at the recording listener on ``127.0.0.1`` (their ``{port}``), at private and
special addresses, and at cloud metadata services. Each is sent with ``Runtime.execute``
under the operator's egress rules. Nothing leaves the machine: while the class runs, a
process audit hook watches every ``socket.connect``; a connection to loopback reaches the
listener (and is recorded there), one to any other address is refused by the hook before
it is made, and recorded. Either is an escape, and the key responsible is the
``private_exceptions`` entry (or ``block_private = false``) that let the address through.

:func:`redirects` sends each tool to a redirector on ``127.0.0.1`` (reachable through the
one exact exception :mod:`._recorder` adds) that answers 301, 302, 307 and 308 with each
``redirect_targets`` URL of the corpus: loopback on another port (the listener), private
and metadata addresses, the canary as a ``file://`` URL and other schemes. The hop is
judged by the operator's own rules; a hop that connects, or brings the canary back, is an
escape.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from toolcage.policies import EgressConfig
from toolcage.policies._egress import parse_private_exception

from .._runtime import Runtime
from ._base import AttackContext, Outcome
from ._corpora import load_corpus
from ._recorder import REDIRECT_CODES, Recorder
from ._report import Finding

NETWORK_TOOLS = ("http_request", "web_fetch")


class _Watch:
    """The process audit hook: records connections, refuses any that is not to loopback.

    An audit hook cannot be removed; it is installed once per process and acts only while
    a watch is active."""

    active: _Watch | None = None
    installed = False

    def __init__(self) -> None:
        self.connects: list[str] = []

    @classmethod
    def hook(cls, event: str, args: tuple[Any, ...]) -> None:
        watch = cls.active
        if watch is None or event != "socket.connect" or not isinstance(args[1], tuple):
            return
        host = str(args[1][0])
        watch.connects.append(host)
        if not _loopback(host):
            raise ConnectionRefusedError(f"toolcage selftest: no connection to {host}")


def _loopback(host: str) -> bool:
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    return False


@contextlib.contextmanager
def watching() -> Iterator[_Watch]:
    if not _Watch.installed:
        sys.addaudithook(_Watch.hook)
        _Watch.installed = True
    watch = _Watch()
    _Watch.active = watch
    try:
        yield watch
    finally:
        _Watch.active = None


class Listener:
    """Accepts connections on 127.0.0.1 and counts them (the bait of the corpus)."""

    def __init__(self) -> None:
        self.hits = 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port: int = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.hits += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


def cases() -> list[tuple[str, str]]:
    """(payload class, URL) for every URL of the corpus."""
    corpus = load_corpus("ssrf_corpus.json")
    found = [(c["group"], c["url"]) for c in corpus["cases"]]
    found += [("cloud metadata", url) for url in corpus["metadata"]]
    return found


async def attack(ctx: AttackContext) -> Outcome:
    """The corpus's URLs, then its redirects, through each network tool."""
    egress = ctx.config.egress
    found = await direct(ctx.runtime, egress, ctx.within_budget)
    canary = (ctx.scratch.outside / "secret.txt", ctx.scratch.canary)
    hops, skipped = await redirects(
        ctx.runtime, egress, ctx.bait.redirector, canary, ctx.within_budget
    )
    return Outcome(found + hops, skipped)


async def direct(
    runtime: Runtime, egress: EgressConfig, within_budget: Callable[[], bool]
) -> list[Finding]:
    """One finding per network tool and payload class."""
    listener = Listener()
    outcomes: dict[tuple[str, str], list[str]] = {}
    try:
        with watching() as watch:
            for tool in NETWORK_TOOLS:
                if tool not in runtime.registry:
                    continue
                for group, raw in cases():
                    if not within_budget():
                        break
                    url = raw.replace("{port}", str(listener.port))
                    hits, seen = listener.hits, len(watch.connects)
                    await runtime.execute(tool, {"url": url})
                    reached = (
                        watch.connects[seen:]
                        if listener.hits > hits
                        else [h for h in watch.connects[seen:] if not _loopback(h)]
                    )
                    escaped = outcomes.setdefault((tool, group), [])
                    if reached:
                        escaped.append(f"{url} connected to {reached[0]}")
    finally:
        listener.close()
    return [
        Finding(
            "ssrf",
            tool,
            group,
            not escaped,
            _responsible(egress, tool, escaped[0].rsplit(" ", 1)[1]) if escaped else "",
            "; ".join(escaped[:3]),
        )
        for (tool, group), escaped in outcomes.items()
    ]


def _responsible(egress: EgressConfig, tool: str, host: str) -> str:
    """The egress key that let ``host`` through for ``tool``."""
    override = egress.tools.get(tool)
    prefix = "egress"
    rules: Any = egress
    if override is not None and {"block_private", "private_exceptions"} & override.model_fields_set:
        prefix, rules = f"egress.tools.{tool}", override
    if not rules.block_private:
        return f"{prefix}.block_private = false lets {host} through"
    with contextlib.suppress(ValueError):
        address = ipaddress.ip_address(host.split("%")[0])
        for i, entry in enumerate(rules.private_exceptions):
            network, _ = parse_private_exception(entry)
            if address in network:
                return f"{prefix}.private_exceptions.{i} opens {entry} ({host})"
    return f"{prefix}: {host} was reached"


def redirect_cases(canary: Path) -> list[tuple[str, str]]:
    """(payload class, Location) for every redirect target of the corpus, ``file://``
    ones aimed at ``canary``."""
    found = []
    for target in load_corpus("ssrf_corpus.json")["redirect_targets"]:
        scheme = urlsplit(target).scheme
        if scheme == "file":
            target = canary.as_uri()
        host = urlsplit(target).hostname or ""
        if scheme not in ("", "http", "https"):
            group = "redirect to another scheme"
        elif host.startswith("169.254.") or "metadata" in host:
            group = "redirect to cloud metadata"
        elif host.startswith("10.") or host.startswith("fd"):
            group = "redirect to a private address"
        else:
            group = "redirect to loopback, another port"
        found.append((group, target))
    return found


async def redirects(
    runtime: Runtime,
    egress: EgressConfig,
    redirector: Recorder,
    canary: tuple[Path, str],
    within_budget: Callable[[], bool],
) -> tuple[list[Finding], list[str]]:
    """One finding per network tool and redirect class; what could not run, and why."""
    listener = Listener()
    outcomes: dict[tuple[str, str], list[tuple[str, str]]] = {}
    skipped: list[str] = []
    try:
        with watching() as watch:
            for tool in NETWORK_TOOLS:
                if tool not in runtime.registry:
                    continue
                asked = len(redirector.seen)
                control = await runtime.execute(tool, {"url": redirector.url + "/ok"})
                if len(redirector.seen) == asked:  # the first hop never left: nothing to judge
                    why = control.error.message if control.error else control.output_text
                    skipped.append(f"ssrf: {tool} cannot reach the redirector ({why[:160]})")
                    continue
                for group, raw in redirect_cases(canary[0]):
                    target = raw.replace("{port}", str(listener.port))
                    for code in REDIRECT_CODES:
                        if not within_budget():
                            break
                        query = urlencode({"to": target, "code": code})
                        hits, seen = listener.hits, len(watch.connects)
                        result = await runtime.execute(
                            tool, {"url": f"{redirector.url}/go?{query}"}
                        )
                        hops = watch.connects[seen:]
                        away = [h for h in hops if not _loopback(h)]
                        escaped = outcomes.setdefault((tool, group), [])
                        if listener.hits > hits or away:
                            host = away[0] if away else hops[-1]
                            escaped.append((f"{code} to {target} connected to {host}", host))
                        elif canary[1] in result.output_text:
                            escaped.append((f"{code} to {target} read the canary", ""))
    finally:
        listener.close()
    found = []
    for (tool, group), escaped in outcomes.items():
        key = ""
        if escaped:
            host = escaped[0][1]
            key = (
                _responsible(egress, tool, host)
                if host
                else f"egress: {tool} followed a redirect off http(s)"
            )
        detail = "; ".join(what for what, _ in escaped[:3])
        found.append(Finding("ssrf", tool, group, not escaped, key, detail))
    return found, skipped
