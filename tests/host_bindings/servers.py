"""Real HTTP(S) servers on 127.0.0.1 for the network tests, with canned routes."""

from __future__ import annotations

import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Route = Callable[[BaseHTTPRequestHandler], None]


def _send(
    handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str, **headers: str
) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in headers.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)


NASTY_HTML = b"""<!DOCTYPE html><html><head><title>T &amp; T</title>
<style>body { color: red }</style><script>alert("x</p>");</script></head>
<body><h1>Main &lt;title&gt;</h1><p>Hello&nbsp;<b>world</b> &#8212; caf&eacute; &#x1F600;</p>
<ul><li>one<li>two <a href="/next?a=1&amp;b=2">link</a></ul>
<pre><code>if (a < b) { return; }</code></pre>
<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>
<p>unclosed <i>italic <div>nested</p></div><!-- comment <h1>no</h1> -->
<p><a href="rel/x.html">rel</a> <a href="//cdn.example/y">cdn</a> <a href="#top">top</a></p>
<script>document.write("<h2>hidden</h2>")</script><noscript>noscript-text</noscript>
</body></html>"""


PATHOLOGICAL = (
    b"<div>" * 20000
    + b"<ul>" * 500
    + b"<li>deep"
    + b"<a href='x'>" * 100
    + b"&#99999999999; &#xD800; &bogus; &#; &amp &lt;3 <3 a < b"
    + b"<table><td>cell" * 50
    + b"<p title='unterminated > quote'>after quote</p>"
    + b"<pre>" * 10
    + b"<h7>not a heading</h7><!-- unterminated comment <h1>gone"
)


def default_routes() -> dict[str, Route]:
    def ok(h: BaseHTTPRequestHandler) -> None:
        _send(h, 200, b"hello", "text/plain; charset=utf-8", X_Test="1")

    def echo(h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length)
        text = f"{h.command} {h.path} {h.headers.get('X-Custom', '')} {body.decode()}"
        _send(h, 201, text.encode(), "text/plain")

    def redirect(h: BaseHTTPRequestHandler) -> None:
        _send(h, 302, b"", "text/plain", Location="/ok")

    def loop(h: BaseHTTPRequestHandler) -> None:
        _send(h, 302, b"", "text/plain", Location="/loop")

    def big(h: BaseHTTPRequestHandler) -> None:
        _send(h, 200, b"x" * (3 * 1024 * 1024), "text/plain")

    def slow(h: BaseHTTPRequestHandler) -> None:
        time.sleep(3)
        _send(h, 200, b"late", "text/plain")

    def latin1(h: BaseHTTPRequestHandler) -> None:
        _send(h, 200, "café €".encode("cp1252"), "text/plain; charset=windows-1252")

    def bad_utf8(h: BaseHTTPRequestHandler) -> None:
        _send(h, 200, b"ok \xff\xfe bytes", "text/plain")

    def binary(h: BaseHTTPRequestHandler) -> None:
        _send(h, 200, bytes(range(256)), "image/png")

    def html(h: BaseHTTPRequestHandler) -> None:
        _send(h, 200, NASTY_HTML, "text/html; charset=utf-8")

    def pathological(h: BaseHTTPRequestHandler) -> None:
        _send(h, 200, PATHOLOGICAL, "text/html")

    def json_(h: BaseHTTPRequestHandler) -> None:
        _send(h, 200, b'{"a": [1, 2]}', "application/json")

    return {
        "/ok": ok,
        "/echo": echo,
        "/redirect": redirect,
        "/loop": loop,
        "/big": big,
        "/slow": slow,
        "/latin1": latin1,
        "/bad-utf8": bad_utf8,
        "/binary": binary,
        "/page.html": html,
        "/dir/page.html": html,
        "/data.json": json_,
        "/pathological.html": pathological,
    }


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up early (caps, timeouts, TLS refusals) are expected here."""


class Server:
    """A threaded HTTP server on 127.0.0.1 serving ``routes`` (by path, query ignored)."""

    def __init__(self, routes: dict[str, Route], tls: ssl.SSLContext | None = None) -> None:
        self.hits: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                outer.hits.append(self.path)
                route = routes.get(self.path.split("?")[0])
                if route is None:
                    _send(self, 404, b"nope", "text/plain")
                else:
                    route(self)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port: int = self.httpd.server_address[1]
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def serving(
    routes: dict[str, Route] | None = None, *, tls_dir: Path | None = None
) -> Iterator[Server]:
    tls = None
    if tls_dir is not None:
        cert, key = tls_dir / "cert.pem", tls_dir / "key.pem"
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=127.0.0.1",
                "-keyout",
                str(key),
                "-out",
                str(cert),
            ],
            check=True,
            capture_output=True,
        )
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(cert, key)
    server = Server(routes or default_routes(), tls)
    try:
        yield server
    finally:
        server.close()
