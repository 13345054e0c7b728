"""The ``toolcage`` command.

    toolcage tools [--config FILE] [--json]
    toolcage call NAME 'JSON' [--config FILE] [--approve]
    toolcage call --jsonl [--config FILE] [--approve]     one {"tool", "arguments"} per line
    toolcage sidecar ...                                    the shell daemon

``call`` prints the result envelope as JSON and exits 0 on success, 1 on a tool error;
every command exits 2 on bad usage (including a broken config, named by key).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import anyio
from toolcage.policies import ConfigError

from ._approval import Approval, ApprovalRequest, CallbackApproval
from ._errors import ToolValidationError, UsageError
from ._result import ToolResult
from ._runtime import Runtime

EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE = 0, 1, 2


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["sidecar"]:
        from toolcage.sidecar.__main__ import main as sidecar_main

        status: int = sidecar_main(argv[1:])
        return status
    args = _parser().parse_args(argv)
    try:
        runtime = Runtime.from_config(args.config)
    except (ConfigError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "approve", False):
        runtime.approval = CallbackApproval(_approve_all)
    if args.command == "tools":
        return anyio.run(_list_tools, runtime, args.json)
    if args.jsonl:
        if args.name is not None:
            print("error: --jsonl reads calls from stdin; give no NAME", file=sys.stderr)
            return EXIT_USAGE
        return anyio.run(_call_lines, runtime, sys.stdin, sys.stdout)
    if args.name is None:
        print("error: call needs a tool NAME and its JSON arguments (or --jsonl)", file=sys.stderr)
        return EXIT_USAGE
    return anyio.run(_call_one, runtime, args.name, args.arguments)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolcage", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    tools = commands.add_parser("tools", help="list the available tools")
    tools.add_argument("--json", action="store_true", help="print JSON instead of a table")
    call = commands.add_parser("call", help="call a tool and print its result envelope")
    call.add_argument("name", nargs="?", help="the tool's name")
    call.add_argument("arguments", nargs="?", default="{}", help="the arguments as JSON")
    call.add_argument("--jsonl", action="store_true", help="read calls from stdin, one per line")
    call.add_argument(
        "--approve", action="store_true", help="approve privileged calls (you are the approver)"
    )
    for sub in (tools, call):
        sub.add_argument("--config", metavar="FILE", help="operator config (TOML)")
    # Handed to the sidecar's own parser before this one runs; listed here for --help.
    commands.add_parser("sidecar", help="run the shell daemon (toolcage sidecar --help)")
    return parser


def _approve_all(request: ApprovalRequest) -> Approval:
    del request
    return Approval.ALLOW_ONCE


async def _list_tools(runtime: Runtime, as_json: bool) -> int:
    async with runtime:
        rows = runtime.registry.listing()
        if as_json:
            data = [
                {
                    "name": r.name,
                    "description": r.description,
                    "safety_tier": r.safety_tier.value,
                    "timeout": r.timeout,
                    "needs": list(r.needs),
                }
                for r in rows
            ]
            print(json.dumps(data, indent=2))
            return EXIT_OK
        width = max((len(r.name) for r in rows), default=4)
        for r in rows:
            needs = f"  [needs: {', '.join(r.needs)}]" if r.needs else ""
            print(f"{r.name:<{width}}  {r.safety_tier.value:<14}  {r.description}{needs}")
    return EXIT_OK


async def _call_one(runtime: Runtime, name: str, arguments: str) -> int:
    async with runtime:
        result = await runtime.execute(name, arguments)
    print(json.dumps(result.envelope(), ensure_ascii=False))
    return EXIT_TOOL_ERROR if result.is_error else EXIT_OK


async def _call_lines(runtime: Runtime, source: TextIO, sink: TextIO) -> int:
    status = EXIT_OK
    async with runtime:
        for line in source:
            if not line.strip():
                continue
            envelope = await _call_line(runtime, line)
            if envelope["status"] != "success":
                status = EXIT_TOOL_ERROR
            sink.write(json.dumps(envelope, ensure_ascii=False) + "\n")
            sink.flush()
    return status


async def _call_line(runtime: Runtime, line: str) -> dict[str, Any]:
    try:
        request = json.loads(line)
    except json.JSONDecodeError as exc:
        return _bad_line(f"line is not JSON: {exc.msg}")
    if not isinstance(request, dict) or not isinstance(request.get("tool"), str):
        return _bad_line('each line must be an object {"tool": NAME, "arguments": {...}}')
    result = await runtime.execute(request["tool"], request.get("arguments", {}))
    return result.envelope()


def _bad_line(message: str) -> dict[str, Any]:
    return ToolResult.failure("", ToolValidationError(message)).envelope()


if __name__ == "__main__":
    raise SystemExit(main())
