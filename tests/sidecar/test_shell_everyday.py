"""Everyday commands through ``Runtime.from_config`` + ``shell_exec``, in the real sandbox.

The default ``[shell]`` section (sandboxed mode) runs globs, ``test``/``[``/``[[``, loops,
conditionals, here-documents in either order and long chains; these tests run them on a
small repository-like tree and check what they print and write.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from toolcage.policies import ShellPolicy, ShellPolicyViolation
from toolcage.policies._config import parse_config
from toolcage.runtime import Runtime, ToolResult
from toolcage.runtime.shell import ShellExecTool

from .conftest import TEST_LIMITS, give_to_sandbox, make_workspace

pytestmark = pytest.mark.anyio

TREE = {
    "README.md": "# demo\n" + "".join(f"line {i}\n" for i in range(11)),
    "src/app.py": "def main():\n    return 1\n# TODO: more\n",
    "src/util.py": "def helper():\n    pass\n",
    "tests/test_app.py": "def test_main():\n    assert True\n",
    "data.csv": "b,2\na,1\nc,3\n",
    "logs/app.log": "ok\nerror: one\nok\n",
    "out1.txt": "",
}
EVERYDAY = Path(__file__).parents[1] / "policies" / "everyday_commands.json"


@pytest.fixture
def workspace() -> Path:
    workspace = make_workspace()
    for name, text in TREE.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    give_to_sandbox(workspace)
    return workspace


@pytest.fixture
async def runtime(workspace: Path) -> AsyncIterator[Runtime]:
    config = parse_config(
        {
            "shell": {
                "workspace": str(workspace),
                "limits": TEST_LIMITS.model_dump(),
            },
            "approval": {"auto_approve": ["shell_exec"]},
        },
        base_dir=workspace.parent,
    )
    async with Runtime.from_config(config) as running:
        yield running


async def run(runtime: Runtime, command: str, **arguments: Any) -> ToolResult:
    return await runtime.execute("shell_exec", {"command": command, **arguments})


async def stdout(runtime: Runtime, command: str) -> str:
    """What ``command`` printed; it must have been allowed and exited 0."""
    result = await run(runtime, command)
    assert not result.is_error, result.envelope()
    assert result.details["exit_code"] == 0, result.output_text
    return result.output_text.rpartition("\n[exit code")[0]


class TestGlobsAndLoops:
    async def test_a_loop_over_a_glob(self, runtime: Runtime) -> None:
        out = await stdout(runtime, 'for f in src/*.py; do wc -l "$f"; done')
        assert out.splitlines() == ["3 src/app.py", "2 src/util.py"]

    async def test_a_read_loop_over_a_pipe(self, runtime: Runtime) -> None:
        command = "find src -name '*.py' | sort | while read -r f; do wc -l \"$f\"; done"
        assert (await stdout(runtime, command)).splitlines() == ["3 src/app.py", "2 src/util.py"]

    async def test_globs_as_arguments(self, runtime: Runtime) -> None:
        assert await stdout(runtime, "grep -c def src/*.py") == "src/app.py:1\nsrc/util.py:1"
        assert await stdout(runtime, "ls -d */") == "logs/\nsrc/\ntests/"
        found = await stdout(runtime, "grep -rn 'def main' --include=*.py .")
        assert found == "./src/app.py:1:def main():"
        assert await stdout(runtime, "sed -s -n 1p src/*.py") == "def main():\ndef helper():"

    async def test_a_glob_redirect_target_inside_the_workspace(
        self, runtime: Runtime, workspace: Path
    ) -> None:
        await stdout(runtime, "echo written > out*.txt")
        assert (workspace / "out1.txt").read_text() == "written\n"

    async def test_conditionals_and_tests(self, runtime: Runtime, workspace: Path) -> None:
        assert await stdout(runtime, "[ -f README.md ] && echo yes") == "yes"
        assert await stdout(runtime, "test -f missing.txt || echo no") == "no"
        assert await stdout(runtime, "if [[ -d src && 3 -gt 2 ]]; then echo dir; fi") == "dir"
        assert await stdout(runtime, "case app.py in *.py) echo py;; *) echo other;; esac") == "py"
        todo = 'for f in src/*.py; do if grep -q TODO "$f"; then echo "$f"; fi; done'
        assert await stdout(runtime, todo) == "src/app.py"
        sized = 'for f in src/*.py; do [ -s "$f" ] && echo "$f"; done'
        assert await stdout(runtime, sized) == "src/app.py\nsrc/util.py"
        await stdout(runtime, "until [ -f done.txt ]; do touch done.txt; done")
        assert (workspace / "done.txt").exists()
        assert await stdout(runtime, "while true; do echo once; break; done") == "once"
        assert await stdout(runtime, "! grep -q nothing README.md && echo absent") == "absent"


class TestFixedVariables:
    """``$HOME``, ``~`` and ``$PWD`` pass the default policy and expand as it assumed:
    ``HOME`` is the sandbox's private ``/tmp``, ``PWD`` the path inside the sandbox."""

    async def test_home_and_tilde_are_the_sandbox_home(self, runtime: Runtime) -> None:
        assert (
            await stdout(runtime, 'echo $HOME ${HOME} "$HOME" ~ ~/x')
            == "/tmp /tmp /tmp /tmp /tmp/x"
        )
        assert await stdout(runtime, "ls -A ~ && cd ~ && pwd") == "/tmp"
        assert await stdout(runtime, '[ -d "$HOME" ] && echo home') == "home"

    async def test_pwd_is_the_path_in_the_sandbox(self, runtime: Runtime) -> None:
        assert (
            await stdout(runtime, 'cd src && echo "$PWD" $PWD') == "/workspace/src /workspace/src"
        )
        assert await stdout(runtime, 'ls "$PWD"') == "app.py\nutil.py"  # the session kept src
        assert await stdout(runtime, 'basename "$PWD" && cd ..') == "src"

    async def test_arithmetic_over_numbers(self, runtime: Runtime) -> None:
        assert await stdout(runtime, "echo $((6 * 7)) $((2 ** 10))") == "42 1024"

    async def test_errors_name_the_commands_own_lines(self, runtime: Runtime) -> None:
        result = await run(runtime, "true\ncat < missing.txt\necho after")
        assert "bash: line 2: missing.txt: No such file or directory" in result.output_text
        assert "toolcage:" not in result.output_text


class TestHeredocsAndChains:
    async def test_heredocs_in_both_orders(self, runtime: Runtime, workspace: Path) -> None:
        await stdout(runtime, "cat <<'EOF' > notes.txt\n$HOME stays as written\nEOF")
        assert (workspace / "notes.txt").read_text() == "$HOME stays as written\n"
        await stdout(runtime, "cat > other.txt <<'EOF'\nsecond\nEOF")
        assert (workspace / "other.txt").read_text() == "second\n"
        await stdout(runtime, "cat <<EOF >> other.txt\nplain third\nEOF")
        assert (workspace / "other.txt").read_text() == "second\nplain third\n"
        assert await stdout(runtime, "cat <<'EOF' | sort\nb\na\nEOF") == "a\nb"

    async def test_a_thirty_command_chain(self, runtime: Runtime) -> None:
        chain = " && ".join(f"echo {i}" for i in range(30))
        assert (await stdout(runtime, chain)).splitlines() == [str(i) for i in range(30)]
        mixed = " ; ".join(["true"] * 25) + " || echo unreached; echo end"
        assert await stdout(runtime, mixed) == "end"

    async def test_an_endless_loop_is_stopped_at_its_timeout(self, runtime: Runtime) -> None:
        result = await run(runtime, "while true; do true; done", timeout=1)
        assert result.envelope()["error_type"] == "timeout", result.envelope()
        assert await stdout(runtime, "echo alive") == "alive"


async def test_every_admitted_everyday_command_runs_unrefused(runtime: Runtime) -> None:
    """The sidecar admits what the runtime's policy admits: none of the corpus the policy
    passes is refused in the sandbox, and none hangs."""
    corpus = json.loads(EVERYDAY.read_text("utf-8"))
    tool = runtime.registry.get("shell_exec")
    assert isinstance(tool, ShellExecTool)
    admitted = [
        command
        for group in corpus["groups"]
        for command in group["commands"]
        if admits(tool.policy, command)
    ]
    assert len(admitted) >= 250
    for command in admitted:
        result = await run(runtime, command)
        envelope = result.envelope()
        assert envelope.get("error_type") not in ("permission_denied", "timeout"), envelope


def admits(policy: ShellPolicy, command: str) -> bool:
    try:
        policy.check(command)
    except ShellPolicyViolation:
        return False
    return True
