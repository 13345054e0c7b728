"""The ``toolcage`` command.

    toolcage --version                                    the installed version
    toolcage tools [--config FILE] [--json]
    toolcage call NAME 'JSON' [--config FILE] [--approve]
    toolcage call --jsonl [--config FILE] [--approve]   one {"tool", "arguments", "id"} per line
    toolcage call ... --server PATH                       the call, answered by ``toolcage serve``
    toolcage serve [--config FILE] --socket PATH [--approve]
                                                          answer calls on a Unix socket
    toolcage check [--config FILE]                        is this machine ready for the config?
    toolcage scheduler [--config FILE] --provider P --base-url URL --model M
                                                          fire due schedules until SIGTERM
    toolcage mcp [--config FILE] [--agent A] [--http HOST:PORT | --socket PATH]
                                                          serve the tools over MCP (stdio)
    toolcage new-tool NAME [--dir D]                      scaffold an operator guest tool
    toolcage audit tail [-n N] [--follow] [--config FILE] the last records of the audit log
    toolcage audit grep PATTERN [--tool T] [--user U] [--status S] [--config FILE]
    toolcage selftest [--config FILE] [--only C,...] [--json] [--junit FILE]
                                                          attack the config; 0 if it holds
    toolcage sidecar ...                                  the shell daemon

``tools`` lists an MCP server that did not start as ``SERVER__*``, ``unavailable``, with why
(``--json``: ``{"name", "unavailable"}``). ``call`` prints the result envelope as JSON (and
its display line, for people, on stderr) and exits 0 on success, 1 on a tool error (with
``--jsonl``: 1 if any call failed; a bad line is answered and the batch goes on). ``check``
prints one line per check and exits 0 only when all of them hold. Every command exits 2 on
bad usage (a broken config is named by its key), 130 on Ctrl-C, and 141 when the reader of
its output goes away (``toolcage tools | head -1``), without a traceback.

Every command takes ``--log-format json|text`` and ``-v`` (repeatable): log records go to
stderr, one line each, warnings and worse (``scheduler``: and its info), with tracebacks
only from ``-v`` on (see :mod:`toolcage.policies._log_format`).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio
from toolcage.policies import ConfigError
from toolcage.policies._log_format import add_logging_arguments, configure_logging

from .._approval import Approval, ApprovalRequest, CallbackApproval
from .._channel import JsonLinesChannel
from .._errors import UsageError
from .._runtime import Runtime
from .._tool import DEFAULT_CONTEXT
from .._version import toolcage_version
from ._audit import add_parser as add_audit_parser
from ._audit import run_audit
from ._client import SERVER_ENV
from ._json_out import write_json_line
from ._jsonl import (
    LINE_OVERHEAD,
    LineError,
    LineReader,
    answer,
    argv_problem,
    error_answer,
    parse_call_line,
)
from ._new_tool import add_parser as add_new_tool_parser
from ._new_tool import run_new_tool
from ._scheduler_args import add_parser as add_scheduler_parser
from ._selftest import add_parser as add_selftest_parser

EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130
"""128 + SIGINT, as a shell reports a command stopped by Ctrl-C."""
EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE, as a shell reports a writer whose reader went away."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (``None``: this process's own, which then ends).

    Run as the program (``argv=None``), it freezes the garbage collector's objects on the way
    out (:func:`gc.freeze`): the interpreter's last collections then skip what start-up built
    (the config models, the engine's bindings), which would otherwise cost a short command
    like ``call`` tens of milliseconds at exit. Everything the command opened is closed
    before."""
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:  # stdout on a full disk, say: one line, not a traceback
        _discard_stdout()
        print(f"toolcage: error: {exc}", file=sys.stderr)
        return EXIT_TOOL_ERROR
    finally:
        if argv is None:
            gc.freeze()


def _main(argv: list[str]) -> int:
    if argv[:1] == ["sidecar"]:
        from toolcage.sidecar.__main__ import main as sidecar_main

        status: int = sidecar_main(argv[1:])
        return status
    args = _parser(argv[0] if argv and not argv[0].startswith("-") else None).parse_args(argv)
    configure_logging(args.log_format, args.verbose, daemon=args.command == "scheduler")
    if args.command == "check":
        from ._check import run_checks  # the state store and the sidecar: only for this verb

        return anyio.run(run_checks, args.config, sys.stdout)
    if args.command == "new-tool":
        return run_new_tool(args)
    if args.command == "audit":
        return run_audit(args)
    if args.command == "selftest":
        from ._selftest import run_selftest_command  # the corpora, only for this command

        return run_selftest_command(args)
    if args.command == "scheduler":
        from ._scheduler import run_scheduler  # the agent loop, only for this command

        return run_scheduler(args)
    try:
        # What tools send to the user's channel (send_media) goes to stderr as JSON lines;
        # stdout carries the result envelopes.
        runtime = Runtime.from_config(args.config, channel=JsonLinesChannel(sys.stderr))
    except (ConfigError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "approve", False):
        runtime.approval = CallbackApproval(_approve_all)
    if args.command == "serve":
        from ._serve import Served, serve  # the socket server, only for this command

        served = Served.at_start(args.config, args.approve)
        try:
            return anyio.run(serve, runtime, served, Path(args.socket))
        except UsageError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    if args.command == "mcp":
        from ._mcp import run_mcp  # the MCP SDK, only for this command

        return run_mcp(args, runtime)
    if args.command == "tools":
        return anyio.run(_list_tools, runtime, args.json)
    if args.jsonl:
        if args.name is not None:
            print("error: --jsonl reads calls from stdin; give no NAME", file=sys.stderr)
            return EXIT_USAGE
        return anyio.run(_call_lines, runtime, sys.stdin.fileno())
    if args.name is None:
        print("error: call needs a tool NAME and its JSON arguments (or --jsonl)", file=sys.stderr)
        return EXIT_USAGE
    return anyio.run(_call_one, runtime, args.name, args.arguments)


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser, for ``command`` (the verb given; ``None``: any).

    ``scheduler`` and ``selftest`` get their arguments only when they are the verb parsed
    (or none is given): their options name what loading takes tens of milliseconds (the
    provider adapters, the attack classes), which ``call`` should not pay. Every verb is
    listed, with its help line, either way."""
    parser = argparse.ArgumentParser(
        prog="toolcage",
        description="Run toolcage's sandboxed tools from the command line, serve them over "
        "MCP, fire schedules, and check that this machine is ready for a config.",
    )
    parser.add_argument("--version", action="version", version=f"toolcage {toolcage_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    tools = commands.add_parser("tools", help="list the available tools")
    tools.add_argument("--json", action="store_true", help="print JSON, with each tool's schema")
    call = commands.add_parser("call", help="call a tool and print its result envelope")
    call.add_argument("name", nargs="?", help="the tool's name")
    call.add_argument("arguments", nargs="?", default="{}", help="the arguments as JSON")
    call.add_argument("--jsonl", action="store_true", help="read calls from stdin, one per line")
    call.add_argument(
        "--approve", action="store_true", help="approve privileged calls (you are the approver)"
    )
    call.add_argument(
        "--server",
        metavar="PATH",
        help=f"send the call to a running toolcage serve (also ${SERVER_ENV})",
    )
    serve = commands.add_parser(
        "serve", help="answer toolcage call --server on a Unix socket only your uid may use"
    )
    serve.add_argument("--socket", metavar="PATH", required=True, help="the socket to create")
    serve.add_argument(
        "--approve", action="store_true", help="approve privileged calls (you are the approver)"
    )
    check = commands.add_parser(
        "check", help="check the config and this machine: guests, bubblewrap, the sidecar"
    )
    mcp = commands.add_parser(
        "mcp", help="serve the tools over MCP (stdio; HTTP with --http or --socket)"
    )
    mcp.add_argument("--agent", metavar="A", help="serve only the tools of this agent profile")
    where = mcp.add_mutually_exclusive_group()
    where.add_argument(
        "--http", metavar="HOST:PORT", help="streamable HTTP (host: 127.0.0.1), with a token"
    )
    where.add_argument(
        "--socket", metavar="PATH", help="streamable HTTP on a Unix socket only your uid may use"
    )
    mcp.add_argument(
        "--unsafe-no-token",
        action="store_true",
        help="UNSAFE: serve --http on loopback without a token (every local account gets in)",
    )
    for sub in (tools, call, check, mcp, serve):
        sub.add_argument("--config", metavar="FILE", help="operator config (TOML)")
    add_scheduler_parser(commands, arguments=command in (None, "scheduler"))
    add_new_tool_parser(commands)
    add_audit_parser(commands)
    add_selftest_parser(commands, arguments=command in (None, "selftest"))
    for sub in commands.choices.values():
        add_logging_arguments(sub)
    # Handed to the sidecar's own parser before this one runs; listed here for --help.
    commands.add_parser("sidecar", help="run the shell daemon (toolcage sidecar --help)")
    return parser


def _approve_all(request: ApprovalRequest) -> Approval:
    del request
    return Approval.ALLOW_ONCE


async def _list_tools(runtime: Runtime, as_json: bool) -> int:
    async with runtime:
        rows = runtime.registry.listing()
        # the tools of an MCP server that did not start: unknown yet, listed by prefix
        withheld = [(f"{prefix}*", why.message) for prefix, why in runtime.registry.withheld()]
    if as_json:
        data: list[dict[str, object]] = [
            {
                "name": r.name,
                "description": r.description,
                "safety_tier": r.safety_tier.value,
                "timeout": r.timeout,
                "needs": list(r.needs),
                "parameters": r.parameters,
            }
            for r in rows
        ]
        data += [{"name": name, "unavailable": reason} for name, reason in withheld]
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return EXIT_OK
    width = max(
        (len(name) for name in [r.name for r in rows] + [n for n, _ in withheld]), default=4
    )
    for r in rows:
        needs = f"  [needs: {', '.join(r.needs)}]" if r.needs else ""
        summary = r.description.split("\n", 1)[0]
        print(f"{r.name:<{width}}  {r.safety_tier.value:<14}  {summary}{needs}")
    for name, reason in withheld:
        print(f"{name:<{width}}  {'unavailable':<14}  {reason}")
    return EXIT_OK


async def _call_one(runtime: Runtime, name: str, arguments: str) -> int:
    result = argv_problem(name, arguments)
    if result is None:
        async with runtime:
            result = await runtime.execute(name, arguments)
    write_json_line(sys.stdout, result.envelope())
    if result.display:
        print(result.display, file=sys.stderr)
    return EXIT_TOOL_ERROR if result.is_error else EXIT_OK


async def _call_lines(runtime: Runtime, fd: int) -> int:
    status = EXIT_OK
    limit = runtime.config.limits.max_argument_bytes + LINE_OVERHEAD
    reader = LineReader(fd, limit)
    number = 0
    async with runtime:
        while (line := await reader.next()) is not None:
            number += 1
            raw, too_long = line
            if not too_long and not raw.strip():
                continue
            if too_long:
                envelope = error_answer(LineError(f"the line is over {limit:,} bytes"), number)
            else:
                parsed = parse_call_line(raw)
                if isinstance(parsed, LineError):
                    envelope = error_answer(parsed, number)
                else:
                    call, call_id = parsed
                    result = await runtime.execute_call(call, DEFAULT_CONTEXT)
                    envelope = answer(result.envelope(), call_id, number)
            if envelope["status"] != "success":
                status = EXIT_TOOL_ERROR
            write_json_line(sys.stdout, envelope)
    return status


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    raise SystemExit(main())
