"""No sink holds a secret: the same secret-bearing payloads reach every one of them.

Each payload below hides one value in a shape credentials take in text (a shell
assignment, TOML, INI, YAML, ``.env``, JSON -- over the audit log's size cut, after a byte
order mark, inside prose, escaped in another JSON string --, a Python ``repr``, a configured
secret's value as it is and encoded, what the operator's ``redact_keys`` and
``redact_patterns`` name). A runtime built by ``Runtime.from_config`` gets each payload as
a host tool's argument that the tool's error quotes, as a path the path policy refuses
(its reason quotes the path) and, for the shell shape, as a command the shell policy
refuses. Every sink is then read whole -- the audit file, the spans and their events
(through the OpenTelemetry SDK's in-memory exporter), the log records (as toolcage's JSON
formatter and as :class:`logging.Formatter` write them) and the error envelopes -- and none
may hold the value. The CLI's stderr, which third-party libraries log to, is checked too.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import quote

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from toolcage.policies._log_format import JsonFormatter
from toolcage.runtime import Runtime, SafetyTier, ToolResult, ToolTelemetry, tool

from ..host_bindings.servers import _send, serving

pytestmark = [pytest.mark.adversarial, pytest.mark.anyio]

ENV = "TOOLCAGE_TEST_SINK_SECRET"
CONFIGURED = "cfg+Secret/Value=0123456789"
"""The value of the configured ``[secrets.api]``."""


@dataclass(frozen=True)
class Payload:
    name: str
    text: str
    hidden: str
    """The value that no sink may hold."""


def _payloads() -> list[Payload]:
    def v(name: str) -> str:
        return f"hunter2-{name}-7Qz9xK"

    pad = "x" * 300_000
    shapes = {
        "shell assignment": "GIT_PASSWORD={} git push",
        "TOML": 'password = "{}"',
        "INI": "[db]\nhost = db.internal\napi_key = {}\nport = 5432",
        "YAML": "database:\n  user: app\n  password: {}\n",
        ".env": "export SERVICE_TOKEN={}\nDEBUG=1",
        "JSON over the size cut": '{{"password": "{}", "pad": "' + pad + '"}}',
        "JSON after a byte order mark": '\ufeff{{"password": "{}"}}',
        "JSON inside prose": 'the server said {{"error": "denied", "api_key": "{}"}} and left',
        "JSON escaped in a JSON string": '{{"body": "{{\\"client_secret\\": \\"{}\\"}}"}}',
        "a Python dict's repr": "{{'user': 'app', 'password': '{}'}}",
        "a Python call's repr": "Credentials(user='app', secret_key='{}')",
        "key = value in prose": "retrying with passwd = {} after a timeout",
    }
    made = [Payload(name, shape.format(v(str(i))), v(str(i))) for i, (name, shape) in
            enumerate(shapes.items())]  # fmt: skip
    made += [
        Payload("a configured secret", f"token was {CONFIGURED}", CONFIGURED),
        Payload(
            "a configured secret, percent-encoded",
            f"GET /x?k={quote(CONFIGURED, safe='')}",
            CONFIGURED,
        ),
        Payload(
            "a configured secret, base64-encoded",
            "Basic " + base64.b64encode(f"app:{CONFIGURED}".encode()).decode(),
            CONFIGURED,
        ),
        Payload("an operator key", "X-Tenant: acme-corp-4242\nAccept: */*", "acme-corp-4242"),
        Payload("an operator pattern", "billing for tenant-918273 failed", "tenant-918273"),
    ]
    return made


PAYLOADS = _payloads()


@tool(safety_tier=SafetyTier.READ_ONLY)
def connect(dsn: str) -> str:
    """Fail as client libraries do: quoting what they were given.

    Args:
        dsn: Where to connect.
    """
    raise RuntimeError(f"cannot connect with {dsn}")


@dataclass
class Sinks:
    """Everything that left the runtime, by sink."""

    root: Path
    exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    json_logs: io.StringIO = field(default_factory=io.StringIO)
    plain_logs: io.StringIO = field(default_factory=io.StringIO)
    results: list[ToolResult] = field(default_factory=list)

    def texts(self) -> dict[str, str]:
        spans = [
            {
                "name": span.name,
                "attributes": dict(span.attributes or {}),
                "events": [(e.name, dict(e.attributes or {})) for e in span.events],
                "status": span.status.description,
            }
            for span in self.exporter.get_finished_spans()
        ]
        envelopes = [json.dumps(r.envelope(), ensure_ascii=False) for r in self.results]
        return {
            "the audit file": (self.root / "audit.jsonl").read_text(encoding="utf-8"),
            "the spans": json.dumps(spans, default=str, ensure_ascii=False),
            "the JSON log records": self.json_logs.getvalue(),
            "the logging.Formatter records": self.plain_logs.getvalue(),
            "the error envelopes": "\n".join(envelopes + [r.output_text for r in self.results]),
        }


def _config(root: Path) -> Path:
    (root / "workspace").mkdir(exist_ok=True)
    path = root / "toolcage.toml"
    path.write_text(
        '[[mounts.areas]]\nhost = "workspace"\nguest = "/workspace"\n'
        'tiers = { read_only = "ro" }\n'
        '[shell]\nworkspace = "workspace"\n[approval]\nauto_approve = ["shell_exec"]\n'
        '[audit]\npath = "audit.jsonl"\nredact_keys = ["x-tenant"]\n'
        'redact_patterns = ["tenant-[0-9]{6}"]\n'
        f'[secrets.api]\nfrom_env = "{ENV}"\nhosts = ["api.example.com"]\n'
    )
    return path


@asynccontextmanager
async def watched(root: Path) -> AsyncIterator[tuple[Runtime, Sinks]]:
    """A runtime whose every sink is collected."""
    sinks = Sinks(root)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(sinks.exporter))
    handlers = []
    for stream, formatter in (
        (sinks.json_logs, JsonFormatter(tracebacks=True)),
        (sinks.plain_logs, logging.Formatter("%(levelname)s %(name)s %(message)s")),
    ):
        handler = logging.StreamHandler(stream)
        handler.setFormatter(formatter)
        handlers.append(handler)
        logging.getLogger().addHandler(handler)
    telemetry = ToolTelemetry(tracer_provider=provider, metrics=False)
    try:
        async with Runtime.from_config(
            _config(root), tools=[connect], telemetry=telemetry
        ) as runtime:
            yield runtime, sinks
    finally:
        for handler in handlers:
            logging.getLogger().removeHandler(handler)
        provider.shutdown()


@pytest.fixture(autouse=True)
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, CONFIGURED)


async def _feed(runtime: Runtime, payload: Payload) -> list[ToolResult]:
    """The payload as a crashing tool's argument, a refused path, a refused command."""
    results = [
        await runtime.execute("connect", {"dsn": payload.text}),
        await runtime.execute("file_read", {"path": "/srv/" + payload.text[:200]}),
    ]
    if payload.name == "shell assignment":
        results.append(await runtime.execute("shell_exec", {"command": payload.text}))
    return results


@pytest.mark.parametrize("payload", PAYLOADS, ids=[p.name for p in PAYLOADS])
async def test_no_sink_holds_the_value(tmp_path: Path, payload: Payload) -> None:
    async with watched(tmp_path) as (runtime, sinks):
        sinks.results = await _feed(runtime, payload)
    assert all(result.is_error for result in sinks.results)
    for sink, text in sinks.texts().items():
        assert payload.hidden not in text, f"{sink} holds the value of {payload.name!r}"
        assert "[REDACTED]" in text or "[redacted secret api]" in text, sink


async def test_the_shell_refusal_reason_is_redacted_in_the_span(tmp_path: Path) -> None:
    command = "GIT_PASSWORD=hunter2-span-7Qz9xK git push"
    async with watched(tmp_path) as (runtime, sinks):
        sinks.results = [await runtime.execute("shell_exec", {"command": command})]
    [span] = sinks.exporter.get_finished_spans()
    attributes = span.attributes or {}
    assert attributes["toolcage.shell.allowed"] is False
    assert attributes["toolcage.shell.reason"] == (
        "Shell policy refused 'GIT_PASSWORD=[REDACTED]': protected variable (GIT_* settings "
        "can make programs run code)"
    )
    assert sinks.results[0].envelope()["message"] == attributes["toolcage.shell.reason"]


def test_the_clis_stderr_holds_no_value(tmp_path: Path) -> None:
    """``toolcage call`` with debug logging: httpcore logs the response headers, which
    echo the credential in a form the old redaction did not know."""
    form = quote(CONFIGURED, safe="!$&'()*+,;=:@")

    def echo(h: BaseHTTPRequestHandler) -> None:
        _send(h, 200, f"got {form}".encode(), "text/plain", X_Echo=form)

    with serving({"/echo": echo}) as server:
        config = _config(tmp_path)
        text = config.read_text().replace('"api.example.com"', f'"127.0.0.1:{server.port}"')
        config.write_text(
            text + 'schemes = ["http"]\nheader = "Authorization"\n'
            '[egress]\nprivate_exceptions = ["127.0.0.1"]\n'
        )
        done = subprocess.run(
            [
                *(sys.executable, "-m", "toolcage.runtime", "call", "http_request"),
                json.dumps({"url": server.url + "/echo"}),
                *("--config", str(config), "--log-format", "json", "-vv"),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, ENV: CONFIGURED},
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "x-echo" in done.stderr.lower()  # httpcore's record of the headers is there
    for where in (done.stdout, done.stderr):
        assert CONFIGURED not in where
        assert form not in where
    assert "[redacted secret api]" in done.stdout
