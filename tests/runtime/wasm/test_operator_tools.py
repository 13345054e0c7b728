"""The operator's own guest tools: scaffolded with ``toolcage new-tool``, built with the
command it writes, and loaded from ``[guest_tools] dirs`` by ``Runtime.from_config``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from toolcage.policies import ConfigError
from toolcage.runtime import Runtime

TOOL = "first_line"

MOUNTS = '[[mounts.areas]]\nhost = "data"\nguest = "/data"\ntiers = { read_only = "ro" }\n'


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the scaffolded tool, built by the script the scaffold wrote."""
    root = tmp_path_factory.mktemp("scaffold")
    done = subprocess.run(
        [sys.executable, "-m", "toolcage.runtime", "new-tool", TOOL, "--dir", "tools"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    script = root / "tools" / f"build_{TOOL}.sh"
    assert str(script.relative_to(root)) in done.stdout
    done = subprocess.run(
        [str(script)], cwd=root, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (root / "tools" / f"{TOOL}.wasm").is_file()
    return root / "tools"


@pytest.fixture
def site(built: Path, tmp_path: Path) -> Path:
    """A config directory: the built tool under ``tools/``, ``data/`` mounted read-only at
    ``/data``, and a ``secret/`` directory that no mount grants."""
    shutil.copytree(built, tmp_path / "tools")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("hello there\nsecond line\n")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "key.txt").write_text("do not show\n")
    (tmp_path / "data" / "escape.txt").symlink_to(tmp_path / "secret" / "key.txt")
    (tmp_path / "toolcage.toml").write_text('[guest_tools]\ndirs = ["tools"]\n\n' + MOUNTS)
    return tmp_path


async def call(config: Path, arguments: dict[str, Any]) -> dict[str, Any]:
    async with Runtime.from_config(config) as runtime:
        result = await runtime.execute(TOOL, arguments)
    envelope: dict[str, Any] = result.envelope()
    return envelope


pytestmark = pytest.mark.anyio


class TestScaffoldedTool:
    async def test_is_listed_with_its_declaration(self, site: Path) -> None:
        async with Runtime.from_config(site / "toolcage.toml") as runtime:
            rows = {row.name: row for row in runtime.registry.listing()}
        assert rows[TOOL].safety_tier.value == "read_only"
        assert rows[TOOL].needs == ("fs",)
        assert "file_read" in rows  # beside the built-ins

    async def test_reads_a_file_under_its_mount(self, site: Path) -> None:
        envelope = await call(site / "toolcage.toml", {"path": "/data/notes.txt"})
        assert envelope["status"] == "success", envelope
        assert envelope["result"] == "first line of /data/notes.txt: hello there"

    @pytest.mark.parametrize(
        "path", ["/data/../secret/key.txt", "/secret/key.txt", "/data/escape.txt"]
    )
    async def test_reads_nothing_outside_its_mount(self, site: Path, path: str) -> None:
        envelope = await call(site / "toolcage.toml", {"path": path})
        assert envelope["status"] == "error"
        assert envelope["error_type"] == "permission_denied", envelope
        assert "do not show" not in json.dumps(envelope)

    async def test_egress_grants_take_its_bindings_away(self, site: Path) -> None:
        config = site / "toolcage.toml"
        config.write_text(config.read_text() + "\n[egress.grants]\nfirst_line = []\n")
        envelope = await call(config, {"path": "/data/notes.txt"})
        assert envelope["error_type"] == "permission_denied", envelope
        assert "toolcage_fs_v1" in envelope["message"]

    async def test_arguments_are_checked_against_its_schema(self, site: Path) -> None:
        envelope = await call(site / "toolcage.toml", {"path": 3})
        assert envelope["error_type"] == "validation_error"

    @pytest.mark.parametrize(
        ("name", "problem"), [(TOOL, "exists; not overwriting it"), ("Bad-Name", "not a tool name")]
    )
    def test_scaffold_refuses(self, site: Path, name: str, problem: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "toolcage.runtime", "new-tool", name, "--dir", "tools"],
            cwd=site,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2
        assert problem in done.stderr
        assert "Traceback" not in done.stderr
        assert sorted(p.name for p in (site / "tools").iterdir()) == [
            f"build_{TOOL}.sh",
            f"{TOOL}.c",
            f"{TOOL}.json",
            f"{TOOL}.wasm",
        ]


def edit(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    """A fault made by changing the tool's declaration."""

    def apply(site: Path) -> None:
        path = site / "tools" / f"{TOOL}.json"
        declaration = json.loads(path.read_text())
        change(declaration)
        path.write_text(json.dumps(declaration))

    return apply


def write(name: str, text: str) -> Callable[[Path], None]:
    def apply(site: Path) -> None:
        (site / "tools" / name).write_text(text)

    return apply


def rename_to(name: str) -> Callable[[Path], None]:
    def apply(site: Path) -> None:
        for path in (site / "tools").glob(f"{TOOL}.*"):
            if path.suffix in (".json", ".wasm"):
                path.rename(path.with_stem(name))
        declaration = json.loads((site / "tools" / f"{name}.json").read_text())
        declaration["name"] = name
        (site / "tools" / f"{name}.json").write_text(json.dumps(declaration))

    return apply


FAULTS: list[tuple[str, Callable[[Path], None], str]] = [
    ("bad JSON", write(f"{TOOL}.json", "{not json"), f"{TOOL}.json: not valid JSON"),
    (
        "unknown tier",
        edit(lambda d: d.update(safety_tier="harmless")),
        f"{TOOL}.json: safety_tier: 'harmless' is not one of",
    ),
    (
        "bad schema",
        edit(lambda d: d["parameters"]["properties"]["path"].update(type="text")),
        f"{TOOL}.json: parameters.properties.path.type:",
    ),
    (
        "unknown binding",
        edit(lambda d: d.update(needs=["fs", "teleport"])),
        f"{TOOL}.json: needs[1]: 'teleport' is not one of",
    ),
    ("unknown key", edit(lambda d: d.update(colour="red")), f"{TOOL}.json: colour: unknown key"),
    (
        "bad timeout",
        edit(lambda d: d.update(timeout=-1)),
        f"{TOOL}.json: timeout: -1 is not a positive",
    ),
    (
        "path argument that is no parameter",
        edit(lambda d: d.update(path_arguments={"file": "read"})),
        f"{TOOL}.json: path_arguments.file: is not one of the parameters",
    ),
    ("name clash with a guest built-in", rename_to("file_read"), "file_read.json: name:"),
    (
        "name clash with a host built-in",
        rename_to("tool_output_read"),
        "tool_output_read.json: name: 'tool_output_read' is already a tool's name",
    ),
    (
        "missing module",
        lambda site: (site / "tools" / f"{TOOL}.wasm").unlink(),
        f"{TOOL}.json: no module {TOOL}.wasm",
    ),
    (
        "module that is not WASM",
        write(f"{TOOL}.wasm", "not wasm"),
        f"{TOOL}.wasm: not a usable WASM module",
    ),
    (
        "module that imports an undeclared binding",
        edit(lambda d: d.update(needs=[], path_arguments={})),
        f"{TOOL}.json: needs: WASM tool {TOOL} cannot be linked",
    ),
]


class TestRefusedDeclarations:
    @pytest.mark.parametrize(
        ("fault", "message"),
        [(fault, message) for _, fault, message in FAULTS],
        ids=[name for name, _, _ in FAULTS],
    )
    def test_names_the_file_and_key(
        self, site: Path, fault: Callable[[Path], None], message: str
    ) -> None:
        fault(site)
        with pytest.raises(ConfigError) as caught:
            Runtime.from_config(site / "toolcage.toml")
        assert message in str(caught.value)
        assert str(site / "tools") in str(caught.value)

    def test_a_missing_directory_is_named_by_its_key(self, tmp_path: Path) -> None:
        (tmp_path / "toolcage.toml").write_text('[guest_tools]\ndirs = ["nowhere"]\n')
        with pytest.raises(ConfigError, match=r"guest_tools\.dirs\[0\]: .*nowhere"):
            Runtime.from_config(tmp_path / "toolcage.toml")

    def test_the_cli_reports_it_in_one_line(self, site: Path) -> None:
        edit(lambda d: d.update(safety_tier="harmless"))(site)
        done = subprocess.run(
            [sys.executable, "-m", "toolcage.runtime", "tools", "--config", "toolcage.toml"],
            cwd=site,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2
        assert "safety_tier: 'harmless'" in done.stderr
        assert "Traceback" not in done.stderr
