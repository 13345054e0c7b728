"""``make demo`` runs the whole product on the embedded default config."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def project() -> Iterator[Path]:
    """A project directory that a root sidecar's unprivileged command uid can reach."""
    with tempfile.TemporaryDirectory(prefix="toolcage-demo-") as name:
        Path(name).chmod(0o755)
        yield Path(name)


def test_demo_runs_every_step_on_the_default_config(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolcage.runtime.cli.demo"],
        capture_output=True,
        text=True,
        cwd=project,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # The file tools wrote, edited and read back a file in the default workspace...
    assert (project / "workspace/demo/hello.md").read_text() == "# Hello\n\ntoolcage says hello.\n"
    assert "/workspace/demo/hello.md:3:toolcage says hello." in out
    # ...the sandboxed shell saw the same file at /workspace...
    assert "/workspace\\n# Hello\\n\\ntoolcage says hello.\\n[exit code 0" in out
    # ...and the hostile and broken calls got their typed errors.
    assert out.count('"error_type": "permission_denied"') == 3
    assert out.count('"error_type": "validation_error"') == 1
    assert out.count('"error_type": "not_found"') == 1
    assert out.count('"status": "success"') == 18
    # ...and the agent's memory and scratchpad went through the embedded store.
    assert (project / ".toolcage/state.db").is_file()
    assert out.count('\\"text\\": \\"The user prefers green tea, no sugar.\\"') == 1
    assert out.count('\\"text\\": \\"The user now prefers jasmine tea.\\"') == 1
    assert '"result": "[]\\nkeyword-only search' in out
    assert '\\"items\\": [\\"read the config\\", \\"write the summary\\"]' in out
    # ...and a schedule was created there and listed.
    assert '\\"name\\": \\"weekday inbox summary\\", \\"next_run_at\\"' in out
    assert '\\"total\\": 1, \\"remaining\\": 0' in out
