"""What the build puts into python_exec.wasm, seen through ``Runtime.execute``.

The fixes are build-time patches of the guest (``wasm_tools/python/guest/sandbox.py``) and
the preloaded standard library (``preload.py``); each test names the trap it closes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from toolcage.runtime import Runtime

from ._doors import LARGE, exception, python, run

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("python_exec_compiled")]

STDLIB = [
    "argparse",
    "array",
    "ast",
    "base64",
    "bisect",
    "calendar",
    "collections",
    "colorsys",
    "configparser",
    "contextlib",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "dis",
    "doctest",
    "email",
    "email.mime.text",
    "enum",
    "fnmatch",
    "fractions",
    "functools",
    "gettext",
    "glob",
    "graphlib",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html.parser",
    "http.client",
    "inspect",
    "ipaddress",
    "itertools",
    "json",
    "locale",
    "logging.handlers",
    "operator",
    "pathlib",
    "pickle",
    "pprint",
    "queue",
    "random",
    "secrets",
    "shlex",
    "shutil",
    "sqlite3",
    "statistics",
    "string",
    "struct",
    "tarfile",
    "tempfile",
    "textwrap",
    "tokenize",
    "tomllib",
    "typing",
    "unicodedata",
    "unittest",
    "urllib.parse",
    "uuid",
    "wave",
    "xml.dom.minidom",
    "xml.etree.ElementTree",
    "zipfile",
    "zlib",
    "zoneinfo",
]
"""Modules typical code imports; all preloaded at build time (a module not imported then
cannot be imported at all)."""

ABSENT = ["ssl", "ctypes", "bz2", "lzma", "multiprocessing.synchronize"]
"""Modules whose C part the WASI build of CPython lacks."""


async def failed_imports(runtime: Runtime, names: list[str]) -> dict[str, str]:
    code = (
        "import importlib\nfailed = {}\n"
        f"for name in {names!r}:\n"
        "    try:\n        importlib.import_module(name)\n"
        "    except ImportError as e:\n        failed[name] = type(e).__name__\n"
        "failed\n"
    )
    result = await run(runtime, code)
    assert not result.is_error, result.output_text
    failed: dict[str, str] = ast.literal_eval(result.output_text)
    return failed


class TestTheBuild:
    async def test_the_whole_pure_python_standard_library_is_importable(
        self, tmp_path: Path
    ) -> None:
        async with python(tmp_path) as runtime:
            assert await failed_imports(runtime, STDLIB) == {}

    async def test_modules_without_their_c_part_are_absent(self, tmp_path: Path) -> None:
        async with python(tmp_path) as runtime:
            assert set(await failed_imports(runtime, ABSENT)) == set(ABSENT)

    async def test_the_host_packages_are_not_bundled(self, tmp_path: Path) -> None:
        # without a hermetic build path, the build's own site-packages were importable
        host = ["pytest", "wasmtime", "pydantic", "toolcage"]
        async with python(tmp_path) as runtime:
            assert set(await failed_imports(runtime, host)) == set(host)

    async def test_nothing_written_while_preloading_reaches_a_call(self, tmp_path: Path) -> None:
        # a warning printed while _ios_support was preloaded began every call's stderr
        async with python(tmp_path) as runtime:
            result = await run(runtime, "print(1)")
        assert result.output_text == "1"
        assert result.details == {"stdout_bytes": 2, "stderr_bytes": 0}

    async def test_the_environment_is_empty_and_each_call_is_fresh(self, tmp_path: Path) -> None:
        async with python(tmp_path) as runtime:
            first = await run(
                runtime, "import os\nos.environ['X'] = '1'\nleak = 1\ndict(os.environ)"
            )
            assert first.output_text == "{'X': '1'}"
            assert (await run(runtime, "import os\ndict(os.environ)")).output_text == "{}"
            assert (await run(runtime, "'leak' in globals()")).output_text == "False"


class TestRun:
    async def test_a_clean_exit_is_a_success_and_another_status_an_error(
        self, tmp_path: Path
    ) -> None:
        async with python(tmp_path) as runtime:
            bye = await run(runtime, "import sys\nprint('bye')\nsys.exit()\nprint('no')")
            assert bye.output_text == "bye"
            assert not (await run(runtime, "import sys\nsys.exit(0)")).is_error
            assert exception(await run(runtime, "import sys\nsys.exit(2)")) == "SystemExit: 2"

    async def test_a_failing_repr_of_the_final_value_is_an_error(self, tmp_path: Path) -> None:
        code = "class A:\n    def __repr__(self):\n        raise KeyError('r')\nA()"
        async with python(tmp_path) as runtime:
            result = await run(runtime, code)
        assert result.error is not None
        assert 'File "<code>", line 3, in __repr__' in result.error.message
        assert "app.py" not in result.error.message


class TestOutput:
    async def test_three_megabytes_of_one_print_arrive_whole(self, tmp_path: Path) -> None:
        # WASI stdout took 8 KiB of a long write and the text layer dropped the rest
        size = 3_000_000
        code = f"print('x' * {size})\nimport sys\nsys.stderr.write('y' * {size})"
        async with python(tmp_path, LARGE) as runtime:
            result = await run(runtime, code)
        assert result.details == {"stdout_bytes": size + 1, "stderr_bytes": size}

    async def test_interleaved_writes_keep_their_order(self, tmp_path: Path) -> None:
        code = "import sys\nfor i in range(3000):\n    print(i)\n_ = sys.stdout.write('end')"
        async with python(tmp_path, LARGE) as runtime:
            result = await run(runtime, code)
        assert result.output_text == "".join(f"{i}\n" for i in range(3000)) + "end"


class TestWaits:
    async def test_short_waits_last_as_long_as_asked(self, tmp_path: Path) -> None:
        # every wait is cut into 10 ms slices (so a deadline stops it); the slices add up
        code = (
            "import time, select\nt = time.monotonic()\ntime.sleep(0.05)\n"
            "select.select([], [], [], 0.03)\nselect.poll().poll(30)\n"
            "time.monotonic() - t >= 0.11"
        )
        async with python(tmp_path) as runtime:
            assert (await run(runtime, code)).output_text == "True"
