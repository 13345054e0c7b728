"""``python_exec`` as a host calls it: a runtime from a config, ``execute``, and what the
result says."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from toolcage.runtime import Runtime, ToolExecutionContext, ToolResult
from toolcage.runtime.wasm._python_exec import PythonExecTool

CTX = ToolExecutionContext(user_id="ada", session_id="s1")

LARGE = """
[tools.python_exec]
truncate_bytes = 1000000
timeout = 60
"""
"""Replies that are not cut by the pipeline, so the whole output can be compared."""


@asynccontextmanager
async def python(tmp_path: Path, body: str = "") -> AsyncIterator[Runtime]:
    """A runtime of a config holding ``body`` (default mounts under ``tmp_path``)."""
    path = tmp_path / "toolcage.toml"
    path.write_text(body)
    async with Runtime.from_config(path) as runtime:
        yield runtime


async def run(runtime: Runtime, code: str, ctx: ToolExecutionContext = CTX) -> ToolResult:
    return await runtime.execute("python_exec", {"code": code}, ctx)


def running_guests(runtime: Runtime) -> int:
    tool = runtime.registry.get("python_exec")
    assert isinstance(tool, PythonExecTool)
    return tool.runner.engine.running()


def error_type(result: ToolResult) -> str | None:
    return None if result.error is None else result.error.kind.value


def exception(result: ToolResult) -> str:
    """The last line of the traceback a failed call reported."""
    assert result.error is not None, result.output_text
    return str((result.error.details or {}).get("exception", ""))


def text(result: ToolResult) -> str:
    """What the model reads: the output of a success, the message of a failure."""
    return result.output_text if result.error is None else result.error.message
