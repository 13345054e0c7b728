"""What the build puts into python_exec.wasm, seen from a host that runs it.

The fixes are build-time patches of the guest (``wasm_tools/python/guest/sandbox.py``) and
the preloaded standard library (``preload.py``); each test names the trap it closes.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import wasmtime

from ._harness import Guest

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


def outcome_of_imports(guest: Guest, names: list[str]) -> dict[str, str]:
    code = (
        "import importlib\nfailed = {}\n"
        f"for name in {names!r}:\n"
        "    try:\n        importlib.import_module(name)\n"
        "    except ImportError as e:\n        failed[name] = type(e).__name__\n"
        "failed\n"
    )
    value = guest.run(code).value
    assert value is not None
    result: dict[str, str] = eval(value)  # noqa: S307  (a dict's repr from our own code)
    return result


class TestTheBuild:
    def test_the_whole_pure_python_standard_library_is_importable(self, guest: Guest) -> None:
        assert outcome_of_imports(guest, STDLIB) == {}

    def test_modules_without_their_c_part_are_absent(self, guest: Guest) -> None:
        assert set(outcome_of_imports(guest, ABSENT)) == set(ABSENT)

    def test_the_host_packages_are_not_bundled(self, guest: Guest) -> None:
        # without a hermetic build path, the build's own site-packages were importable
        failed = outcome_of_imports(guest, ["pytest", "wasmtime", "pydantic", "toolcage"])
        assert set(failed) == {"pytest", "wasmtime", "pydantic", "toolcage"}

    def test_nothing_written_while_preloading_reaches_a_call(self, guest: Guest) -> None:
        # a warning printed while _ios_support was preloaded began every call's stderr
        assert guest.run("print(1)") == guest.run("print(1)")
        assert guest.run("print(1)").stderr == ""

    def test_the_environment_is_empty_and_each_call_is_fresh(self, guest: Guest) -> None:
        assert guest.run("import os\nos.environ['X'] = '1'\ndict(os.environ)").value == (
            "{'X': '1'}"
        )
        assert guest.run("import os\ndict(os.environ)").value == "{}"
        assert guest.run("'leak' in globals()").value == "False"


class TestRun:
    def test_the_workspace_is_the_working_directory(self, guest: Guest, tmp_path: Path) -> None:
        (tmp_path / "data.txt").write_text("from the host")
        run = guest.run("import os\nprint(os.getcwd())\nopen('data.txt').read()", tmp_path)
        assert (run.stdout, run.value) == ("/workspace\n", "'from the host'")
        assert guest.run("import os\nos.getcwd()").value == "'/'"  # nothing mounted

    def test_a_clean_exit_is_a_success_and_another_status_an_error(self, guest: Guest) -> None:
        assert guest.run("import sys\nprint('bye')\nsys.exit()\nprint('no')").stdout == "bye\n"
        assert guest.run("import sys\nsys.exit(0)").error is None
        error = guest.run("import sys\nsys.exit(2)").error
        assert error is not None
        assert error.endswith("SystemExit: 2\n")

    def test_output_before_an_exception_is_kept(self, guest: Guest) -> None:
        run = guest.run("print('partial', end='')\nimport sys\nsys.stderr.write('e')\n1 / 0")
        assert (run.stdout, run.stderr) == ("partial", "e")
        assert run.error is not None
        assert run.error.endswith("ZeroDivisionError: division by zero\n")

    def test_a_failing_repr_of_the_final_value_is_an_error(self, guest: Guest) -> None:
        run = guest.run("class A:\n    def __repr__(self):\n        raise KeyError('r')\nA()")
        assert run.error is not None
        assert 'File "<code>", line 3, in __repr__' in run.error
        assert "app.py" not in run.error


class TestOutput:
    @pytest.mark.parametrize("size", [8193, 100_000, 3_000_000])
    def test_one_long_print_arrives_whole(self, guest: Guest, size: int) -> None:
        # WASI stdout took 8 KiB of a long write and the text layer dropped the rest
        run = guest.run(f"print('x' * {size})\nimport sys\nsys.stderr.write('y' * {size})")
        assert run.stdout == "x" * size + "\n"
        assert run.stderr == "y" * size

    def test_interleaved_writes_keep_their_order(self, guest: Guest) -> None:
        code = "import sys, os\nfor i in range(3000):\n    print(i)\nsys.stdout.write('end')"
        assert guest.run(code).stdout == "".join(f"{i}\n" for i in range(3000)) + "end"


class TestWaits:
    """A WASI wait blocks in the host, where the epoch deadline cannot reach: every wait is
    cut into 10 ms slices, so a sleeping call stops at its deadline."""

    @pytest.mark.parametrize(
        "code",
        [
            "import time\ntime.sleep(600)",
            "import asyncio\nasyncio.run(asyncio.sleep(600))",
            "import select\nselect.select([], [], [], 600)",
            "import select\nselect.poll().poll(600_000)",
            "import selectors\nselectors.DefaultSelector().select(600)",
        ],
        ids=["sleep", "asyncio", "select", "poll", "selector"],
    )
    def test_a_long_wait_stops_at_the_deadline(self, guest: Guest, code: str) -> None:
        started = time.monotonic()
        with pytest.raises(wasmtime.WasmtimeError, match="interrupt"):
            guest.run(code, deadline=0.3)
        assert time.monotonic() - started < 600  # stopped, not slept out
        assert guest.run("print('next')").stdout == "next\n"

    def test_short_waits_last_as_long_as_asked(self, guest: Guest) -> None:
        code = (
            "import time, select\nt = time.monotonic()\ntime.sleep(0.05)\n"
            "select.select([], [], [], 0.03)\nselect.poll().poll(30)\n"
            "time.monotonic() - t >= 0.11"
        )
        assert guest.run(code).value == "True"


class TestDeepNesting:
    def test_deep_nesting_raises_instead_of_trapping(self, guest: Guest) -> None:
        nested = guest.run(
            "import json\nx = []\nfor _ in range(100000):\n    x = [x]\njson.dumps(x)"
        )
        assert nested.error is not None
        assert "\nRecursionError: " in nested.error
        parsed = guest.run("eval('[' * 1000 + ']' * 1000)")
        assert parsed.error is not None
        assert "MemoryError" in parsed.error or "RecursionError" in parsed.error
