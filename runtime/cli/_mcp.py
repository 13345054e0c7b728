"""``toolcage mcp``: from parsed arguments to a running MCP server; exit statuses as ``cli``."""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from pathlib import Path

import anyio

from .._errors import UsageError
from .._runtime import Runtime
from ..mcp.serve._serve import TOKEN_ENV, parse_address, serve_http, serve_socket, serve_stdio

EXIT_OK, EXIT_USAGE = 0, 2


def run_mcp(args: argparse.Namespace, runtime: Runtime) -> int:
    """Serve until the client goes away (stdio) or the process is stopped (HTTP, socket)."""
    agent_id: str = args.agent or "default"
    try:
        if args.agent is not None and args.agent not in runtime.config.agents:
            raise UsageError(f"--agent: no agent {args.agent!r} in the config")
        if args.unsafe_no_token and args.http is None:
            raise UsageError("--unsafe-no-token goes with --http")
        if args.socket is not None:
            anyio.run(serve_socket, runtime, agent_id, Path(args.socket), _token(runtime))
        elif args.http is not None:
            host, port = parse_address(args.http)
            token = _token(runtime)
            serve = partial(serve_http, unsafe_no_token=args.unsafe_no_token)
            anyio.run(serve, runtime, agent_id, host, port, token)
        else:
            anyio.run(serve_stdio, runtime, agent_id)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _token(runtime: Runtime) -> str | None:
    """The bearer token: ``[mcp.serve] token``, else the variable ``token_env`` names, else
    ``TOOLCAGE_MCP_TOKEN``; ``None`` when there is none."""
    serve = runtime.config.mcp.serve
    if serve.token is not None:
        return serve.token
    if serve.token_env is not None:
        value = os.environ.get(serve.token_env)
        if not value:
            raise UsageError(f"mcp.serve.token_env: ${serve.token_env} is not set")
        return value
    return os.environ.get(TOKEN_ENV) or None
