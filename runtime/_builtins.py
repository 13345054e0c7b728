"""The tools and security checks a :class:`Runtime` gets from its config.

Each area contributes here: the file tools and their path policy, the shell, the network
and time tools. Resources that need closing (a wasmtime engine, the sidecar client) are
entered into ``stack`` so that closing the runtime closes them.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from toolcage.policies import ToolcageConfig

from ._output_store import OutputStore, ToolOutputRead
from ._path_check import PathCheck
from ._security import SecurityCheck
from ._shell_tool import shell_builtins
from ._tool import Tool
from .wasm import wasm_builtins


def load_builtins(
    config: ToolcageConfig, output_store: OutputStore, stack: AsyncExitStack
) -> tuple[list[Tool], list[SecurityCheck]]:
    """Build the built-in tools and the security checks for ``config``."""
    tools: list[Tool] = [ToolOutputRead(output_store, page_limit=config.limits.truncate_bytes)]
    checks: list[SecurityCheck] = []
    checks.append(PathCheck.from_config(config))
    shell_tools, shell_checks = shell_builtins(config, stack)
    tools += shell_tools
    checks += shell_checks
    tools += wasm_builtins(config, stack)
    return tools, checks
