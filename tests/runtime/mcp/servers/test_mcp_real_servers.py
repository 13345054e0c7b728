"""Real MCP servers from PyPI and npm, configured as the README says, through
``Runtime.from_config``: the README's example runs once its paths name the installs, and
a Node server runs ``fetch()`` -- WebAssembly underneath -- under the default
``memory_bytes``, which an address-space limit would refuse.

The servers are installed once into a cache (:mod:`.mcp_servers.installed`); without
PyPI or npm the tests are skipped, saying why.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from toolcage.policies._config import parse_config
from toolcage.runtime import Runtime, ToolResult

from ....sidecar.conftest import scratch
from ....test_readme import blocks
from ...mcp_servers.installed import NODE, npm_prefix, pypi_venv

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]

EVERYTHING = "@modelcontextprotocol/server-everything"
EVERYTHING_SCRIPT = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def text(result: ToolResult) -> str:
    assert not result.is_error, result.envelope()
    return result.output_text


class TestReadmeExample:
    async def test_the_example_runs_with_its_paths_naming_the_installs(
        self, tmp_path: Path
    ) -> None:
        (example,) = blocks("toml mcp")
        venv = pypi_venv("mcp-server-time")
        config = example.replace("/opt/mcp/time", str(venv))
        if NODE is not None:
            config = config.replace("/opt/mcp/everything", str(npm_prefix(EVERYTHING)))
        (tmp_path / "workspace").mkdir()
        (tmp_path / "toolcage.toml").write_text(config)
        async with Runtime.from_config(tmp_path / "toolcage.toml") as runtime:
            now = await runtime.execute("time__get_current_time", {"timezone": "Europe/Paris"})
            assert json.loads(text(now))["timezone"] == "Europe/Paris"
            if NODE is None:
                return
            echoed = await runtime.execute("everything__echo", {"message": "pasted"})
            assert text(echoed) == "Echo: pasted"
            assert runtime.registry.withheld() == []


@pytest.fixture
def web_file() -> Iterator[str]:
    """The URL of a small file served over HTTP on 127.0.0.1."""
    directory = scratch("web-")
    (directory / "page.txt").write_text("served to a Node server\n" * 100)
    handler = partial(SimpleHTTPRequestHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/page.txt"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class TestNodeMemory:
    async def test_fetch_runs_under_the_default_memory_limit(
        self, tmp_path: Path, web_file: str
    ) -> None:
        prefix = npm_prefix(EVERYTHING)
        entry = {
            "name": "everything",
            "command": [NODE, str(prefix / EVERYTHING_SCRIPT), "stdio"],
            "read_only": [str(prefix)],
            "network": True,  # to reach the file on 127.0.0.1
            "timeout": 120.0,
        }
        (tmp_path / "workspace").mkdir()
        config = parse_config({"mcp": {"servers": [entry]}}, base_dir=tmp_path)
        assert config.mcp.servers[0].memory_bytes == 4 * 1024**3  # the default
        async with Runtime.from_config(config) as runtime:
            arguments = {"name": "page.txt.gz", "data": web_file, "outputType": "resource"}
            zipped = await runtime.execute("everything__gzip_file_as_resource", arguments)
            assert "page.txt.gz" in text(zipped)
