"""web_fetch's time against the size of a page: linear, whatever the page is made of.

Each shape of page -- many attributes on one element, many elements, entities, distinct tag
names, the options of one select, repeated ``<body>`` tags -- is fetched at N and at 4N of
its unit, through ``Runtime.from_config`` and ``execute`` from a server on 127.0.0.1. A cost
linear in the page reads as about 4x from the one to the other; a quadratic one as 16x.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import anyio
from toolcage.policies import EgressConfig, ToolcageConfig
from toolcage.runtime import Runtime

from ..host_bindings.servers import _send, serving
from .stats import ms

SIZES = (30_000, 120_000)
"""Units of each shape (attributes, elements, entities, ...) in the smaller and larger page:
the larger still parses within the guest's default memory limit."""
REPEAT = 3


def _page(body: bytes) -> bytes:
    return b"<!DOCTYPE html><html><head><title>t</title></head><body>" + body + b"</body></html>"


SHAPES: dict[str, Callable[[int], bytes]] = {
    "attributes on one element": lambda n: _page(
        b"<div " + b"".join(b'a%d="v" ' % i for i in range(n)) + b">x</div>"
    ),
    "elements with an attribute": lambda n: _page(b'<span class="c">x</span>' * n),
    "entities": lambda n: _page(b"<p>" + b"&amp;&eacute;&#233;&#x1F600;" * (n // 4) + b"</p>"),
    "distinct tag names": lambda n: _page(b"".join(b"<t%d>x</t%d>" % (i, i) for i in range(n))),
    "options of one select": lambda n: _page(b"<select>" + b"<option>x" * n + b"</select>"),
    "attributes of repeated <body> tags": lambda n: _page(
        b"".join(b"<body b%d=1>" % i for i in range(n)) + b"x"
    ),
}


async def _measure(url: str, base_dir: Path) -> dict[tuple[str, int], float]:
    config = ToolcageConfig(
        egress=EgressConfig(private_exceptions=("127.0.0.1",)), base_dir=base_dir
    )
    medians: dict[tuple[str, int], float] = {}
    async with Runtime.from_config(config) as runtime:
        await runtime.execute("web_fetch", {"url": f"{url}/0/{SIZES[0]}"})  # compile, warm up
        for index, shape in enumerate(SHAPES):
            for size in SIZES:
                samples = []
                for _ in range(REPEAT):
                    started = time.perf_counter()
                    result = await runtime.execute("web_fetch", {"url": f"{url}/{index}/{size}"})
                    samples.append(time.perf_counter() - started)
                    assert not result.is_error, result.envelope()
                medians[(shape, size)] = statistics.median(samples)
    return medians


def run() -> list[str]:
    pages = {
        f"/{index}/{size}": make(size)
        for index, make in enumerate(SHAPES.values())
        for size in SIZES
    }

    def route(h: BaseHTTPRequestHandler) -> None:
        _send(h, 200, pages[h.path], "text/html; charset=utf-8")

    with tempfile.TemporaryDirectory() as tmp, serving(dict.fromkeys(pages, route)) as server:
        (Path(tmp) / "workspace").mkdir()
        medians = anyio.run(_measure, server.url, Path(tmp))
    small, large = SIZES
    lines = []
    for shape in SHAPES:
        a, b = medians[(shape, small)], medians[(shape, large)]
        lines.append(
            f"web_fetch, {shape}: {small:,} {ms(a)}, {large:,} {ms(b)} "
            f"({b / a:.1f}x for 4x the page; linear is ~4x)"
        )
    return lines
