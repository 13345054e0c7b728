"""What the command says about itself: ``--version``, help texts in plain words, and the
version ``toolcage mcp`` reports to its clients."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import pytest

from ..mcp.serve.test_mcp_server import stdio_session
from .test_cli import toolcage

VERSION = version("toolcage")
MARKUP = re.compile(r"``|`|:(?:class|func|meth|mod|data|attr|exc|ref):|\.\. \w+::|^::$", re.M)
"""reStructuredText a docstring may hold and a help text must not."""


def commands() -> list[tuple[str, ...]]:
    """Every command line whose ``--help`` a user may read, found from the help itself."""
    top = toolcage("--help").stdout
    choices = re.search(r"\{([a-z,-]+)\}", top)
    assert choices is not None, top
    found: list[tuple[str, ...]] = [()]
    for name in choices.group(1).split(","):
        found.append((name,))
        nested = re.search(r"^  \{([a-z,-]+)\}", toolcage(name, "--help").stdout, re.M)
        if nested is not None:
            found += [(name, sub) for sub in nested.group(1).split(",")]
    return found


class TestAboutItself:
    def test_version(self) -> None:
        done = toolcage("--version")
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"toolcage {VERSION}\n"

    def test_help_texts_hold_no_markup(self) -> None:
        lines = commands()
        assert ("audit", "grep") in lines
        assert ("sidecar",) in lines
        for line in lines:
            done = toolcage(*line, "--help")
            assert done.returncode == 0, (line, done.stderr)
            assert done.stdout.startswith("usage: toolcage"), line
            assert MARKUP.search(done.stdout) is None, (line, done.stdout)

    @pytest.mark.anyio
    async def test_the_mcp_server_reports_the_version(self, tmp_path: Path) -> None:
        async with stdio_session(tmp_path) as session:
            info = session.server_info
        assert info is not None
        assert (info.name, info.version) == ("toolcage", VERSION)
