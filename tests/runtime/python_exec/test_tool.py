"""``python_exec`` through the doors users use: ``Runtime.from_config`` + ``execute``, the
``toolcage call`` command and an agent turn with a scripted model.

Every call runs the real component (``modules/python_exec.wasm``) in wasmtime on the
component engine. The first compile of the component happens once per machine, in the
session fixture ``python_exec_compiled``; the runtimes here load the cached code.
No test bounds wall-clock time from above: a deadline test checks the *kind* of result
and that the next call works.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from toolcage.policies import ConfigError
from toolcage.runtime import HttpModelClient, Runtime, ToolResult, run_turn
from toolcage.runtime.providers import UserMessage
from toolcage.runtime.wasm._component_engine import (
    StackConfigError,
    check_stacks,
    component_config,
)
from toolcage.runtime.wasm._components import bundled_component
from toolcage.runtime.wasm._python_exec import MAX_CODE_CHARS

from ..fake_llm import API_KEY, MODEL, FakeModel, FakeModelServer, Reply, tool_results
from ..mcp.serve.test_mcp_server import stdio_session, text_of
from ._doors import CTX, LARGE, error_type, exception, python, run, running_guests

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("python_exec_compiled")]


class TestOutput:
    async def test_a_long_print_arrives_whole(self, tmp_path: Path) -> None:
        async with python(tmp_path, LARGE) as runtime:
            result = await run(runtime, "print('x' * 150_000)")
        assert not result.is_error, result.output_text
        assert result.output_text == "x" * 150_000
        assert result.details == {"stdout_bytes": 150_001, "stderr_bytes": 0}

    async def test_writes_and_prints_mixed_arrive_in_order(self, tmp_path: Path) -> None:
        code = "import sys\nsys.stdout.write('a' * 70_000)\nprint('b' * 70_000)"
        async with python(tmp_path, LARGE) as runtime:
            result = await run(runtime, code)
        assert result.output_text == "a" * 70_000 + "b" * 70_000

    async def test_output_past_the_cap_is_cut_with_its_real_size(self, tmp_path: Path) -> None:
        body = LARGE + "output_bytes = 10000\n"
        async with python(tmp_path, body) as runtime:
            result = await run(runtime, "print('y' * 50_000)")
        # The tool's own note reaches the model escaped, as every tool's notes do (_markers).
        head, note = result.output_text.split("\n", 1)
        assert head == "y" * 10_000
        assert note.startswith("\\[output truncated — original size: 50,001 bytes]")
        assert result.details == {"stdout_bytes": 50_001, "stderr_bytes": 0}

    async def test_stderr_follows_stdout_under_its_own_line(self, tmp_path: Path) -> None:
        code = "import sys\nprint('out')\nprint('err', file=sys.stderr)"
        async with python(tmp_path) as runtime:
            result = await run(runtime, code)
        assert result.output_text == "out\n[stderr]\nerr"

    @pytest.mark.parametrize(
        ("code", "text"),
        [
            ("1 + 1", "2"),
            ("[1, 'a']", "[1, 'a']"),
            ("print('a')\n6 * 7", "a\n42"),
            ("x = 5", "(no output)"),
            ("None", "(no output)"),
            ("'é'", "'é'"),
        ],
    )
    async def test_a_final_expression_is_the_value(
        self, tmp_path: Path, code: str, text: str
    ) -> None:
        async with python(tmp_path) as runtime:
            result = await run(runtime, code)
        assert not result.is_error, result.output_text
        assert result.output_text == text

    async def test_the_code_runs_as_main(self, tmp_path: Path) -> None:
        code = 'if __name__ == "__main__":\n    print("main")'
        async with python(tmp_path) as runtime:
            assert (await run(runtime, code)).output_text == "main"


class TestExceptions:
    async def test_an_exception_is_an_execution_error_with_output_and_traceback(
        self, tmp_path: Path
    ) -> None:
        code = "print('before')\nx = 1\nx / 0"
        async with python(tmp_path) as runtime:
            result = await run(runtime, code)
        assert error_type(result) == "execution_error"
        text = result.output_text
        assert text.startswith("before\nTraceback (most recent call last):\n")
        assert 'File "<code>", line 3, in <module>' in text
        assert text.rstrip().endswith("ZeroDivisionError: division by zero")
        assert exception(result) == "ZeroDivisionError: division by zero"

    async def test_the_traceback_shows_only_the_codes_frames(self, tmp_path: Path) -> None:
        code = "def f():\n    raise ValueError('no')\nf()"
        async with python(tmp_path) as runtime:
            result = await run(runtime, code)
        frames = [line for line in result.output_text.splitlines() if line.startswith("  File")]
        assert frames == [
            '  File "<code>", line 3, in <module>',
            '  File "<code>", line 2, in f',
        ]

    async def test_a_syntax_error_is_reported_with_its_line(self, tmp_path: Path) -> None:
        async with python(tmp_path) as runtime:
            result = await run(runtime, "x = 1\nif x\n")
        assert error_type(result) == "execution_error"
        assert exception(result).startswith("SyntaxError")
        assert "line 2" in result.output_text

    async def test_code_past_the_size_limit_is_refused_naming_field_limit_and_size(
        self, tmp_path: Path
    ) -> None:
        async with python(tmp_path) as runtime:
            result = await run(runtime, "#" * (MAX_CODE_CHARS + 1))
        assert error_type(result) == "validation_error"
        assert result.error is not None
        assert result.error.field == "code"
        assert f"{MAX_CODE_CHARS:,}" in result.output_text
        assert f"{MAX_CODE_CHARS + 1:,}" in result.output_text


STOPPING = """
[tools.python_exec]
timeout = 2
"""


class TestLimits:
    @pytest.mark.parametrize(
        "code",
        [
            "while True:\n    pass",
            "import time\ntime.sleep(600)",
            "import asyncio\nasyncio.run(asyncio.sleep(600))",
            "import select\nselect.select([], [], [], 30)",
            "import select\nselect.poll().poll(30_000)",
            "import selectors\nselectors.DefaultSelector().select(30)",
        ],
        ids=["loop", "sleep", "asyncio-sleep", "select", "poll", "selector"],
    )
    async def test_the_deadline_stops_the_call_and_the_next_one_works(
        self, tmp_path: Path, code: str
    ) -> None:
        async with python(tmp_path, STOPPING) as runtime:
            result = await run(runtime, code)
            assert error_type(result) == "timeout", result.output_text
            # The guest stopped itself at the deadline: the pipeline did not abandon it.
            assert running_guests(runtime) == 0
            assert (await run(runtime, "print(1)")).output_text == "1"

    @pytest.mark.parametrize(
        "code",
        [
            "eval('[' * 1000 + ']' * 1000)",
            "x = []\nfor _ in range(100_000):\n    x = [x]\nrepr(x)",
            "import json\nx = []\nfor _ in range(100_000):\n    x = [x]\njson.dumps(x)",
            "def f(n):\n    return f(n + 1)\nf(0)",
        ],
        ids=["parser", "repr", "json", "python"],
    )
    async def test_deep_nesting_raises_instead_of_trapping(self, tmp_path: Path, code: str) -> None:
        async with python(tmp_path, LARGE) as runtime:
            result = await run(runtime, code)
            assert error_type(result) == "execution_error"
            assert exception(result).startswith(("RecursionError", "MemoryError")), exception(
                result
            )
            assert (await run(runtime, "print(1)")).output_text == "1"

    async def test_a_memory_bomb_is_a_memory_error(self, tmp_path: Path) -> None:
        body = "[tools.python_exec]\nmemory_bytes = 134217728\n"
        async with python(tmp_path, body) as runtime:
            result = await run(runtime, "'a' * (1 << 30)")
            assert exception(result) == "MemoryError"
            assert (await run(runtime, "print(1)")).output_text == "1"

    async def test_closing_the_runtime_stops_a_running_call(self, tmp_path: Path) -> None:
        (tmp_path / "toolcage.toml").write_text("[tools.python_exec]\ntimeout = 600\n")
        runtime = Runtime.from_config(tmp_path / "toolcage.toml")
        results: list[ToolResult] = []

        async def loop() -> None:
            results.append(await run(runtime, "while True:\n    pass"))

        async with anyio.create_task_group() as group:
            group.start_soon(loop)
            while running_guests(runtime) == 0:  # noqa: ASYNC110 (a guest thread, not a task)
                await anyio.sleep(0.01)
            await runtime.aclose()
        assert [error_type(r) for r in results] == ["cancelled"]
        assert running_guests(runtime) == 0

    async def test_concurrent_calls_each_get_their_own_instance(self, tmp_path: Path) -> None:
        results: dict[int, str] = {}
        async with python(tmp_path) as runtime:

            async def one(n: int) -> None:
                code = (
                    "import builtins\n"
                    "assert not hasattr(builtins, 'seen')\n"
                    f"builtins.seen = {n}\n"
                    f"{n} * 2"
                )
                results[n] = (await run(runtime, code)).output_text

            async with anyio.create_task_group() as group:
                for n in range(6):
                    group.start_soon(one, n)
        assert results == {n: str(n * 2) for n in range(6)}


class TestLikePython:
    async def test_asyncio_run_works(self, tmp_path: Path) -> None:
        code = (
            "import asyncio\n"
            "async def main():\n"
            "    await asyncio.sleep(0.01)\n"
            "    return 42\n"
            "asyncio.run(main())"
        )
        async with python(tmp_path) as runtime:
            assert (await run(runtime, code)).output_text == "42"

    async def test_zoneinfo_has_the_time_zones(self, tmp_path: Path) -> None:
        code = (
            "import datetime, zoneinfo\n"
            "when = datetime.datetime(2024, 6, 1, tzinfo=zoneinfo.ZoneInfo('Europe/Paris'))\n"
            "str(when.utcoffset())"
        )
        async with python(tmp_path) as runtime:
            assert (await run(runtime, code)).output_text == "'2:00:00'"

    async def test_the_workspace_is_the_working_directory(self, tmp_path: Path) -> None:
        workspace = tmp_path / "workspace"
        workspace.mkdir()
        (workspace / "data.csv").write_text("name,score\na,3\nb,5\n")
        code = (
            "import csv, os, statistics\n"
            "print(os.getcwd())\n"
            "rows = list(csv.DictReader(open('data.csv')))\n"
            "statistics.mean(int(r['score']) for r in rows)"
        )
        async with python(tmp_path) as runtime:
            assert (await run(runtime, code)).output_text == "/workspace\n4"

    async def test_it_writes_the_workspace_its_tier_may_write(self, tmp_path: Path) -> None:
        async with python(tmp_path) as runtime:
            result = await run(runtime, "open('out.txt', 'w').write('hello')")
        assert result.output_text == "5"
        assert (tmp_path / "workspace" / "out.txt").read_text() == "hello"

    async def test_a_read_only_grant_is_a_read_only_mount(self, tmp_path: Path) -> None:
        (tmp_path / "data").mkdir()
        (tmp_path / "data" / "a.txt").write_text("kept")
        body = """
[[mounts.areas]]
host = "data"
guest = "/workspace"
tiers = { side_effecting = "rw" }
tools = { python_exec = "ro" }
"""
        async with python(tmp_path, body) as runtime:
            read = await run(runtime, "open('a.txt').read()")
            write = await run(runtime, "open('a.txt', 'w').write('changed')")
        assert read.output_text == "'kept'"
        assert exception(write).startswith("PermissionError")
        assert (tmp_path / "data" / "a.txt").read_text() == "kept"

    async def test_nothing_survives_from_one_call_to_the_next(self, tmp_path: Path) -> None:
        async with python(tmp_path) as runtime:
            await run(runtime, "import sys\nsys.modules['json'].leak = 1")
            result = await run(runtime, "import json\nhasattr(json, 'leak')")
        assert result.output_text == "False"


class TestConfig:
    async def test_an_operators_component_file_is_run(self, tmp_path: Path) -> None:
        own = tmp_path / "build" / "mine.wasm"
        own.parent.mkdir()
        own.write_bytes(bundled_component().read_bytes())
        body = '[tools.python_exec]\ncomponent = "build/mine.wasm"\n'
        async with python(tmp_path, body) as runtime:
            tool = runtime.registry.get("python_exec")
            assert getattr(tool, "component", None) == own
            assert (await run(runtime, "print('mine')")).output_text == "mine"

    @pytest.mark.parametrize(
        ("body", "problem"),
        [
            ('[tools.python_exec]\ncomponent = "missing.wasm"\n', "no such file"),
            ('[tools.file_read]\ncomponent = "x.wasm"\n', "only python_exec runs a component"),
        ],
    )
    async def test_a_bad_component_setting_is_a_config_error(
        self, tmp_path: Path, body: str, problem: str
    ) -> None:
        (tmp_path / "toolcage.toml").write_text(body)
        with pytest.raises(ConfigError, match=problem):
            Runtime.from_config(tmp_path / "toolcage.toml")

    def test_stack_sizes_that_would_abort_or_crash_the_host_are_refused(self) -> None:
        check_stacks(64 << 20, (64 << 20) + 1, 96 << 20)
        with pytest.raises(StackConfigError, match="async_stack_size"):
            component_config(64 << 20, max_wasm_stack=64 << 20, async_stack=64 << 20)
        with pytest.raises(StackConfigError, match=r"at least 1\.5 times"):
            component_config(64 << 20, thread_stack=8 << 20)


class TestDoors:
    def test_toolcage_call_runs_python(self, tmp_path: Path) -> None:
        (tmp_path / "toolcage.toml").write_text("")
        arguments = json.dumps({"code": "print(sum(range(10)))"})
        done = subprocess.run(
            [sys.executable, "-m", "toolcage.runtime", "call", "python_exec", arguments],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert answer["status"] == "success"
        assert answer["result"] == "45"

    async def test_a_model_runs_python_in_a_turn(self, tmp_path: Path) -> None:
        arguments = json.dumps({"code": "import statistics\nstatistics.median([3, 1, 2])"})
        model = FakeModel(
            "openai_chat", False, [Reply("", [("c1", "python_exec", arguments)]), Reply("2.")]
        )
        (tmp_path / "toolcage.toml").write_text("")
        with FakeModelServer(model) as base_url:
            async with (
                Runtime.from_config(tmp_path / "toolcage.toml") as runtime,
                HttpModelClient.for_provider(
                    "openai_chat", base_url=base_url, api_key=API_KEY, model=MODEL
                ) as client,
            ):
                turn = await run_turn(client, runtime, [UserMessage("Median?")], context=CTX)
        assert turn.text == "2."
        declared = [t["function"]["name"] for t in model.requests[0].body["tools"]]
        assert "python_exec" in declared
        sent = tool_results("openai_chat", model.requests[1].body)
        assert sent[0]["text"].startswith("2")

    async def test_toolcage_mcp_lists_and_runs_python(self, tmp_path: Path) -> None:
        (tmp_path / "toolcage.toml").write_text("")
        async with stdio_session(tmp_path) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            ran = await session.call_tool("python_exec", {"code": "print(sum(range(10)))"})
            failed = await session.call_tool("python_exec", {"code": "1 / 0"})
        listed = tools["python_exec"]
        assert listed.input_schema["required"] == ["code"]
        assert listed.annotations is not None
        assert listed.annotations.read_only_hint is False
        assert not ran.is_error
        assert text_of(ran) == "45"
        assert failed.is_error
        assert failed.structured_content is not None
        assert failed.structured_content["error_type"] == "execution_error"
        assert "ZeroDivisionError: division by zero" in text_of(failed)
