"""A server that starts only once its ready file exists; before, it complains on stderr
(with a credential in the complaint, as careless servers do) and exits with status 3."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("flaky")


@server.tool()
def ping() -> str:
    """Answer."""
    return "pong"


if __name__ == "__main__":
    if not Path(sys.argv[1]).exists():
        print("flaky: starting up", file=sys.stderr)
        print(f"flaky: {sys.argv[1]} is missing; api_key=sk-live-0123456789abcdef", file=sys.stderr)
        sys.exit(3)
    server.run()
