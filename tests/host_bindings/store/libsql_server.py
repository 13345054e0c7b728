"""A libSQL server endpoint for tests: the server's HTTP API on a real libSQL engine.

No libSQL server binary installs from the package registries, so this serves the part of
the server's HTTP protocol that libsql-client's HTTP client uses, ``POST /v1/execute``
(one statement) and ``POST /v1/batch`` (steps with ``ok``/``error``/``not``/``and``/``or``
conditions), with Hrana values (``null``, ``integer`` as text, ``float``, ``text``,
``blob`` as base64) and bearer-token auth, on ``127.0.0.1`` only. Statements run on the
PyPI ``libsql`` package's embedded libSQL engine (3.45: ``F32_BLOB``,
``libsql_vector_idx``, ``vector_top_k``, FTS5), through one connection owned by the
serving thread; requests are served one at a time, each on its own HTTP/1.0 connection.
"""

from __future__ import annotations

import base64
import http.server
import json
import threading
from pathlib import Path
from typing import Any

import libsql


def _value_in(value: dict[str, Any]) -> Any:
    kind = value["type"]
    if kind == "null":
        return None
    if kind == "integer":
        return int(value["value"])
    if kind == "float":
        return float(value["value"])
    if kind == "text":
        return str(value["value"])
    if kind == "blob":
        return base64.b64decode(value["base64"])
    raise ValueError(f"unknown value type {kind!r}")


def _value_out(value: Any) -> dict[str, Any]:
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool | int):
        return {"type": "integer", "value": str(int(value))}
    if isinstance(value, float):
        return {"type": "float", "value": value}
    if isinstance(value, str):
        return {"type": "text", "value": value}
    return {"type": "blob", "base64": base64.b64encode(bytes(value)).decode()}


class LibsqlEngine:
    """One libSQL database; :meth:`execute` and :meth:`batch` take and give Hrana JSON."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._conn: Any = None

    def _cursor(self) -> Any:
        if self._conn is None:  # opened in the serving thread, the only one that uses it
            self._conn = libsql.connect(str(self._path), isolation_level=None)
            self._conn.execute("PRAGMA journal_mode = WAL")  # as the libSQL server runs
        return self._conn.cursor()

    def execute(self, stmt: dict[str, Any]) -> dict[str, Any]:
        cursor = self._cursor()
        if stmt.get("named_args"):
            args: Any = {a["name"].lstrip(":@$"): _value_in(a["value"]) for a in stmt["named_args"]}
        else:
            args = tuple(_value_in(v) for v in stmt.get("args", []))
        cursor.execute(stmt["sql"], args)
        rows = cursor.fetchall() if cursor.description and stmt.get("want_rows", True) else []
        return {
            "cols": [{"name": col[0], "decltype": None} for col in cursor.description or ()],
            "rows": [[_value_out(v) for v in row] for row in rows],
            "affected_row_count": max(cursor.rowcount, 0),
            "last_insert_rowid": None if cursor.lastrowid is None else str(cursor.lastrowid),
        }

    def batch(self, batch: dict[str, Any]) -> dict[str, Any]:
        results: list[dict[str, Any] | None] = []
        errors: list[dict[str, Any] | None] = []

        def holds(cond: dict[str, Any] | None) -> bool:
            if cond is None:
                return True
            kind = cond["type"]
            if kind == "ok":
                return results[cond["step"]] is not None
            if kind == "error":
                return errors[cond["step"]] is not None
            if kind == "not":
                return not holds(cond["cond"])
            if kind == "and":
                return all(holds(c) for c in cond["conds"])
            if kind == "or":
                return any(holds(c) for c in cond["conds"])
            raise ValueError(f"unknown condition {kind!r}")

        for step in batch["steps"]:
            if not holds(step.get("condition")):
                results.append(None)
                errors.append(None)
                continue
            try:
                results.append(self.execute(step["stmt"]))
                errors.append(None)
            except ValueError as exc:
                results.append(None)
                errors.append({"message": str(exc), "code": "SQLITE_ERROR"})
        return {"step_results": results, "step_errors": errors}

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


class LibsqlServer:
    """The endpoint, serving in a thread until :meth:`close`::

    with LibsqlServer(tmp_path / "db.sqlite", token="s3cret") as server:
        store = open_store(server.url, ...)
    """

    def __init__(self, path: Path, *, token: str | None = None) -> None:
        engine = LibsqlEngine(path)
        self.engine = engine
        self.requests = 0
        self.stalled = False
        """While true, requests get no answer until :meth:`close`."""
        self._release = threading.Event()

        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                owner.requests += 1
                if owner.stalled:
                    owner._release.wait()
                    return
                if token is not None and self.headers.get("Authorization") != f"Bearer {token}":
                    self._reply(401, {"message": "Unauthorized", "code": "AUTH_HEADER_INVALID"})
                    return
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                try:
                    if self.path == "/v1/execute":
                        self._reply(200, {"result": engine.execute(request["stmt"])})
                    elif self.path == "/v1/batch":
                        self._reply(200, {"result": engine.batch(request["batch"])})
                    else:
                        self._reply(404, {"message": f"no route {self.path}", "code": "NOT_FOUND"})
                except ValueError as exc:
                    self._reply(400, {"message": str(exc), "code": "SQLITE_ERROR"})

        self._server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._serve, name="libsql-server", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        try:
            self._server.serve_forever(poll_interval=0.05)
        finally:
            self.engine.close()

    def close(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._thread.join()
        self._server.server_close()

    def __enter__(self) -> LibsqlServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
