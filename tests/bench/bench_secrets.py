"""Host-side credentials: what one configured secret adds to an HTTP request.

The secret's own work is timed alone (a loopback request varies by more than it costs);
then both configurations run in the same process, alternating, so the machine's load weighs
on both alike: the egress client alone and ``http_request`` through the whole pipeline.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import anyio
from toolcage.host_bindings import EgressClient
from toolcage.policies import EgressPolicy, SecretPolicy
from toolcage.policies._config import parse_config
from toolcage.runtime import Runtime

from ..host_bindings.servers import _send, serving
from .stats import ms, summarise, us

ROUNDS = 5
ENV = "TOOLCAGE_BENCH_TOKEN"
FILLER = os.urandom(2000).hex().encode()


def _raw(port: int, secret: bool) -> dict[str, Any]:
    raw: dict[str, Any] = {"egress": {"private_exceptions": ["127.0.0.1"]}}
    if secret:
        entry = {"from_env": ENV, "hosts": [f"127.0.0.1:{port}"], "schemes": ["http"]}
        raw["secrets"] = {"api": {**entry, "header": "Authorization", "format": "Bearer {value}"}}
    return raw


def _echo_page(h: BaseHTTPRequestHandler) -> None:
    """A 4 KB body that echoes the Authorization header once (redaction has work to do)."""
    body = (h.headers.get("Authorization", "none") + "\n").encode() + FILLER
    _send(h, 200, body, "text/plain")


def _client_level(url: str, port: int, base: Path) -> list[str]:
    clients = {}
    for secret in (False, True):
        config = parse_config(_raw(port, secret), base_dir=base)
        clients[secret] = EgressClient(
            EgressPolicy(config.egress), secrets=SecretPolicy.load(config.secrets, base)
        )
    samples: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(ROUNDS * 60):  # call by call, alternating
        for secret, client in clients.items():
            started = time.perf_counter()
            client.request("bench", "GET", url, {}, b"", time.monotonic() + 5)
            samples[secret].append(time.perf_counter() - started)
    none, one = summarise(samples[False])[0], summarise(samples[True])[0]
    return [
        f"egress client GET on loopback, no secret: median {ms(none)}; one secret bound to the "
        f"host: median {ms(one)} ({one / none:.3f}x)"
    ]


def _parts(port: int, base: Path) -> list[str]:
    """The secret's own work, without the network's noise around it."""
    config = parse_config(_raw(port, True), base_dir=base)
    secrets = SecretPolicy.load(config.secrets, base)
    redactor = secrets.values
    headers = {"accept": "*/*", "user-agent": "bench"}

    def hop() -> None:
        for_hop = secrets.for_hop(
            "GET", "http", "127.0.0.1", port, "/page", headers, first_hop=True, downgraded=False
        )
        secrets.refuse_unbound_values(
            for_hop.bound, "here", ["url", *for_hop.headers.values()], b""
        )

    echo = ("Bearer " + os.environ[ENV] + "\n").encode() + os.urandom(2000).hex().encode()
    text = os.urandom(1 << 19).hex().encode()
    hop_s = _timed(hop, 5000)
    echo_s = _timed(lambda: redactor.data(echo), 2000)
    text_s = _timed(lambda: redactor.data(text), 20)
    return [
        f"per hop, headers and checks: {us(hop_s)}; redacting a 4 KB body that echoes the "
        f"value: {us(echo_s)}; scanning 1 MB of text with no value in it: {ms(text_s)}"
    ]


def _timed(work: Callable[[], object], times: int) -> float:
    samples = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(times):
            work()
        samples.append((time.perf_counter() - started) / times)
    return min(samples)


def _pipeline_level(url: str, port: int, base: Path) -> list[str]:
    async def measure() -> dict[bool, list[float]]:
        samples: dict[bool, list[float]] = {False: [], True: []}
        runtimes = {
            secret: Runtime.from_config(parse_config(_raw(port, secret), base_dir=base))
            for secret in (False, True)
        }
        try:
            for runtime in runtimes.values():
                await runtime.execute("http_request", {"url": url})  # compile, warm up
            for _ in range(ROUNDS):
                for secret, runtime in runtimes.items():
                    for _ in range(10):
                        started = time.perf_counter()
                        result = await runtime.execute("http_request", {"url": url})
                        samples[secret].append(time.perf_counter() - started)
                        assert not result.is_error
        finally:
            for runtime in runtimes.values():
                await runtime.aclose()
        return samples

    samples = anyio.run(measure)
    none, one = summarise(samples[False])[0], summarise(samples[True])[0]
    return [
        f"http_request (full pipeline), no secret: median {ms(none)}; one secret: median "
        f"{ms(one)} ({one / none:.3f}x)"
    ]


def run() -> list[str]:
    os.environ[ENV] = "bench-credential-0123456789"
    with tempfile.TemporaryDirectory() as tmp, serving({"/page": _echo_page}) as server:
        base = Path(tmp)
        (base / "workspace").mkdir()
        url = server.url + "/page"
        return [
            *_parts(server.port, base),
            *_client_level(url, server.port, base),
            *_pipeline_level(url, server.port, base),
        ]
