"""Every example in the README runs as written and does what the README says."""

from __future__ import annotations

import ast
import contextlib
import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from toolcage.policies import load_config
from toolcage.runtime import Runtime

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


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


def shell_lines() -> list[str]:
    """The commands of the ``sh`` blocks, continuation lines joined, comment lines left out."""
    lines: list[str] = []
    for block in blocks("sh"):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                lines.append(line.strip())
    return lines


def make_targets() -> list[str]:
    """The targets of the README's ``make`` commands."""
    return [line.split()[1] for line in shell_lines() if line.startswith("make ")]


def command_lines() -> list[str]:
    """The README's shell commands other than ``make``: the command line examples."""
    return [line for line in shell_lines() if not line.startswith("make ")]


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


class TestReadmeCommands:
    def test_every_make_command_names_a_target(self) -> None:
        for target in make_targets():
            done = subprocess.run(
                ["make", "--dry-run", target], cwd=ROOT, capture_output=True, text=True
            )
            assert done.returncode == 0, f"make {target}: {done.stderr}"

    @pytest.mark.timeout(1800)  # first builds of the Python and JavaScript examples
    def test_every_command_line_example_runs(self, tmp_path: Path) -> None:
        (tmp_path / ".venv").symlink_to(sys.prefix)  # the README's paths are the checkout's
        (tmp_path / "workspace").mkdir()
        (tmp_path / "workspace" / "notes.md").write_text("# Notes\n\nship the release\n")
        commands = command_lines()
        assert any(" call " in command for command in commands)
        with contextlib.ExitStack() as stack:
            for command in commands:
                if command.endswith("&"):  # a server, for the commands after it
                    stack.enter_context(serving(command.removesuffix("&"), tmp_path))
                    continue
                done = subprocess.run(
                    ["bash", "-o", "pipefail", "-c", command],
                    cwd=tmp_path,
                    capture_output=True,
                    text=True,
                    timeout=600,  # a first build of a component installs its compiler too
                    check=False,
                )
                assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
                if " call " in command:
                    for line in done.stdout.splitlines():
                        assert json.loads(line)["status"] == "success", command


@contextlib.contextmanager
def serving(command: str, cwd: Path) -> Iterator[None]:
    """``command`` (a ``toolcage serve --socket PATH``) running in ``cwd`` once its socket
    is there; stopped with SIGTERM after, and it must stop cleanly."""
    socket = cwd / shlex.split(command)[shlex.split(command).index("--socket") + 1]
    server = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=cwd)
    try:
        while not socket.is_socket():
            assert server.poll() is None, f"{command}: exit {server.returncode}"
            time.sleep(0.05)
        yield
    finally:
        server.terminate()
        assert server.wait(timeout=120) == 0
    assert not socket.exists()


class TestReadmeReference:
    def test_the_config_examples_are_valid_configs(self, tmp_path: Path) -> None:
        example, *others = blocks("toml")
        (tmp_path / "toolcage.toml").write_text(example)
        config = load_config(tmp_path / "toolcage.toml")
        assert [area.guest for area in config.mounts.areas] == ["/workspace", "/reference"]
        assert config.agents["reviewer"].tools == ("file_read", "file_list", "file_search")
        for other in others:  # the smaller examples of one feature each
            (tmp_path / "toolcage.toml").write_text(other)
            load_config(tmp_path / "toolcage.toml")

    def test_the_tool_table_names_every_built_in_tool(self) -> None:
        table = README.read_text().split("## Built-in tools")[1].split("\n## ")[0]
        named = set(re.findall(r"`([a-z_]+)`", table))
        listed = {row.name for row in Runtime.from_config(None).registry.listing()}
        assert listed <= named

    def test_the_log_table_names_every_log_event(self) -> None:
        table = README.read_text().split("## Logs")[1].split("\n## ")[0]
        named = set(re.findall(r"`([a-z_]+\.[a-z_]+)`", table))
        sources = [
            path
            for folder in ("runtime", "policies", "host_bindings", "sidecar")
            for path in (ROOT / folder).rglob("*.py")
        ]
        logged = {
            event
            for path in sources
            for event in re.findall(r'"event": "([a-z_]+\.[a-z_]+)"', path.read_text())
        }
        assert "observer.failed" in logged
        assert logged <= named, sorted(logged - named)
