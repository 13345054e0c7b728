"""The README's embedding example runs as written and prints what the README says."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from toolcage.policies import load_config
from toolcage.runtime import Runtime

README = Path(__file__).resolve().parent.parent / "README.md"


def blocks(language: str) -> list[str]:
    """The fenced code blocks whose info string is ``language`` ('' for plain ones)."""
    found: list[str] = []
    current: list[str] = []
    info: str | None = None
    for line in README.read_text().splitlines():
        if line.startswith("```"):
            if info is None:
                info, current = line[3:].strip(), []
            else:
                if info == language:
                    found.append("\n".join(current) + "\n")
                info = None
        elif info is not None:
            current.append(line)
    return found


class TestReadme:
    def test_starts_with_the_two_commands(self) -> None:
        head = README.read_text().split("## ")[0]
        assert "make demo" in head
        assert "make test" in head

    def test_embedding_example_prints_the_documented_envelopes(self, tmp_path: Path) -> None:
        (example,) = blocks("python")
        code_lines = [line for line in example.splitlines() if line.strip()]
        assert len(code_lines) <= 13  # an example a newcomer reads at a glance
        done = subprocess.run(
            [sys.executable, "-c", example],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=60,
            check=True,
        )
        printed = [ast.literal_eval(line) for line in done.stdout.splitlines()]
        documented = [ast.literal_eval(line) for line in blocks("")[0].strip().splitlines()]
        for got, expected in zip(printed, documented, strict=True):
            assert got.keys() == expected.keys()
            assert {k: v for k, v in got.items() if k != "duration_ms"} == {
                k: v for k, v in expected.items() if k != "duration_ms"
            }


class TestReadmeReference:
    def test_the_config_example_is_a_valid_config(self, tmp_path: Path) -> None:
        (example,) = blocks("toml")
        (tmp_path / "toolcage.toml").write_text(example)
        config = load_config(tmp_path / "toolcage.toml")
        assert [area.guest for area in config.mounts.areas] == ["/workspace", "/reference"]
        assert config.agents["reviewer"].tools == ("file_read", "file_list", "file_search")

    def test_the_tool_table_names_every_built_in_tool(self) -> None:
        table = README.read_text().split("## Built-in tools")[1].split("\n## ")[0]
        named = set(re.findall(r"`([a-z_]+)`", table))
        listed = {row.name for row in Runtime.from_config(None).registry.listing()}
        assert listed <= named
