"""Host bindings: the egress verdicts, a loopback HTTP round trip, the guest's HTML converter."""

from __future__ import annotations

import contextlib
import ipaddress
import tempfile
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import anyio
from toolcage.host_bindings import EgressClient, HttpFailure
from toolcage.policies import EgressConfig, EgressPolicy, ToolcageConfig, blocked_reason
from toolcage.runtime import Runtime

from ..host_bindings.servers import _send, serving
from .stats import ms, summarise, us


def _classifier() -> list[str]:
    addresses = [ipaddress.ip_address(a) for a in ("8.8.8.8", "10.0.0.1", "2606:4700::1", "::1")]
    samples = []
    for _ in range(2000):
        started = time.perf_counter()
        for address in addresses:
            blocked_reason(address)
        samples.append((time.perf_counter() - started) / len(addresses))
    median, p99 = summarise(samples)
    return [f"address classifier: median {us(median)}, p99 {us(p99)} per address"]


def _http() -> list[str]:
    policy = EgressPolicy(EgressConfig(private_exceptions=("127.0.0.1",)))
    client = EgressClient(policy)
    samples = []
    with serving() as server:
        for _ in range(200):
            started = time.perf_counter()
            client.request("bench", "GET", server.url + "/ok", {}, b"", time.monotonic() + 5)
            samples.append(time.perf_counter() - started)
        refused = []
        default = EgressClient(EgressPolicy(EgressConfig()))
        for _ in range(200):
            started = time.perf_counter()
            with contextlib.suppress(HttpFailure):  # the refusal is what is timed
                default.request("bench", "GET", server.url + "/ok", {}, b"", time.monotonic() + 5)
            refused.append(time.perf_counter() - started)
    median, p99 = summarise(samples)
    r_median, r_p99 = summarise(refused)
    return [
        f"egress-checked GET on loopback (new connection each): median {ms(median)}, p99 {ms(p99)}",
        f"refusal of a loopback URL by the default policy: median {ms(r_median)}, p99 {ms(r_p99)}",
    ]


def _web_fetch() -> list[str]:
    page = b"<html><body>" + b"<h2>Section</h2><p>Some <b>text</b> &amp; a " * 5000
    page += b'<a href="/x">link</a></p><ul><li>item</li></ul>' * 5000 + b"</body></html>"

    def route(h: BaseHTTPRequestHandler) -> None:
        _send(h, 200, page, "text/html")

    async def measure(url: str, base_dir: Path) -> list[float]:
        egress = EgressConfig(private_exceptions=("127.0.0.1",))
        config = ToolcageConfig(egress=egress, base_dir=base_dir)
        samples = []
        async with Runtime.from_config(config) as runtime:
            await runtime.execute("web_fetch", {"url": url})  # compile and warm up
            for _ in range(10):
                started = time.perf_counter()
                result = await runtime.execute("web_fetch", {"url": url})
                samples.append(time.perf_counter() - started)
                assert not result.is_error
        return samples

    with tempfile.TemporaryDirectory() as tmp, serving({"/page": route}) as server:
        (Path(tmp) / "workspace").mkdir()
        samples = anyio.run(measure, server.url + "/page", Path(tmp))
    median, p99 = summarise(samples)
    return [
        f"web_fetch of a {len(page) / 1e6:.1f} MB page to Markdown (full pipeline): "
        f"median {ms(median)}, p99 {ms(p99)}"
    ]


def run() -> list[str]:
    return _classifier() + _http() + _web_fetch()
