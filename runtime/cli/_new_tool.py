"""``toolcage new-tool NAME [--lang c|python|js]``: the files of a new operator guest tool.

It writes the tool's code -- ``NAME.c`` (C, the default), ``NAME.py`` (Python) or
``NAME.js`` (JavaScript) -- a read-only tool that reads one file through the host's
``fs`` capability, its declaration ``NAME.json`` and ``build_NAME.sh``, which builds it:
C with the pinned zig and the SDK shipped in the package (``python -m
toolcage.wasm_tools.build --tool``; the guest ABI is described in
``toolcage/wasm_tools/sdk/README.md``), Python with the pinned componentize-py into a
component of the ``toolcage:tool`` world (``--python-tool``; the world is
``toolcage/wasm_tools/python/wit/tool.wit``), JavaScript likewise with the pinned
componentize-js (``--js-tool``). Name the directory in ``[guest_tools] dirs`` and the
built tool loads with the built-ins.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

from .._errors import UsageError

NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
"""A tool name a model can call and a C file can be named after."""

SOURCE = """\
/* {name}: reads a text file under the granted mounts and returns its first line.
 * Built with the toolcage guest SDK (toolcage.h); see the SDK's README.md for the ABI. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "toolcage.h"

#define READ_CAP (1u << 20)

static const char *run(const char *args, tc_buf *out) {{
    char *path = tc_arg_str(args, "path", NULL);
    if (!path) return tc_fail(out, TC_VALIDATION, "path must be a string");
    tc_buf data = {{0}};
    long long size = 0;
    const char *error = NULL;
    /* Through the host's fs binding: only beneath the mounts granted to this tool. */
    int err = tc_read_file(path, READ_CAP, &data, &size);
    if (err) {{
        error = tc_fail_errno(out, err, TC_READING, "cannot read", path);
    }} else {{
        const char *text = tc_buf_cstr(&data);
        size_t line = strcspn(text, "\\n");
        tc_buf_printf(out, "first line of ");
        tc_buf_put_name(out, path, strlen(path));
        tc_buf_printf(out, ": %.*s", (int)line, text);
    }}
    tc_buf_free(&data);
    free(path);
    return error;
}}

int main(void) {{ return tc_tool_main(run); }}
"""


PYTHON_SOURCE = '''\
"""{name}: reads a text file under the granted mounts and returns its first line.

Built into a WebAssembly component with ``sh build_{name}.sh``. The host's capabilities
this tool's declaration grants (its ``needs``) are the modules of ``wit_world.imports``;
the build links nothing else. A failing host call raises ``Err``, its reason in ``.value``.
"""

from componentize_py_types import Err
from wit_world.imports import fs, log

READ_CAP = 1 << 20


def run(arguments: dict) -> str:
    """The tool: ``arguments`` are its validated parameters; the text returned is its
    result (a dict or list would be sent as JSON); an exception is its error."""
    path = arguments["path"]
    try:
        data = fs.read_file(path, READ_CAP)  # only beneath the mounts granted to this tool
    except Err as err:
        raise ValueError(f"cannot read {{path}}: {{err.value}}") from None
    line = data.decode("utf-8", errors="replace").split("\\n", 1)[0]
    log.write("info", f"read {{len(data)}} bytes of {{path}}")
    return f"first line of {{path}}: {{line}}"
'''
"""The Python tool's code (``run`` is what the host calls)."""

JS_SOURCE = """\
// {name}: reads a text file under the granted mounts and returns its first line.
//
// Built into a WebAssembly component with `sh build_{name}.sh`. The host's capabilities
// this tool's declaration grants (its `needs`) are the modules `toolcage:tool/NEED@0.1.0`
// (see toolcage/wasm_tools/python/wit/tool.wit); the build links nothing else. A failing
// host call throws, its reason in `.payload`.
import {{ readFile }} from 'toolcage:tool/fs@0.1.0';
import {{ write }} from 'toolcage:tool/log@0.1.0';

const READ_CAP = 1 << 20;

// The tool: `args` are its validated parameters; the string returned is its result (an
// object or array would be sent as JSON); what it throws is its error.
export function run(args) {{
  const path = args.path;
  let data;
  try {{
    data = readFile(path, READ_CAP); // only beneath the mounts granted to this tool
  }} catch (error) {{
    throw new Error(`cannot read ${{path}}: ${{error.payload ?? error}}`);
  }}
  const line = new TextDecoder().decode(data).split('\\n', 1)[0];
  write('info', `read ${{data.length}} bytes of ${{path}}`);
  return `first line of ${{path}}: ${{line}}`;
}}
"""
"""The JavaScript tool's code (``run`` is what the host calls)."""

LANGUAGES = {"c": (".c", SOURCE), "python": (".py", PYTHON_SOURCE), "js": (".js", JS_SOURCE)}
"""Each language's file suffix and code."""
FLAGS = {".c": "--tool", ".py": "--python-tool", ".js": "--js-tool"}
"""The build command's flag for each kind of source."""


def declaration(name: str, lang: str = "c") -> dict[str, object]:
    """The declaration of the scaffolded tool."""
    return {
        "name": name,
        "description": "Return the first line of a text file.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path, such as /workspace/a.txt."}
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        "safety_tier": "read_only",
        "timeout": 10,
        "path_arguments": {"path": "read"},
        "needs": ["fs"] if lang == "c" else ["fs", "log"],
    }


def build_command(source: Path) -> list[str]:
    """The command that builds ``source`` into the module (or component) beside it."""
    return [sys.executable, "-m", "toolcage.wasm_tools.build", FLAGS[source.suffix], str(source)]


def new_tool(name: str, directory: Path, lang: str = "c") -> list[Path]:
    """Write the files of tool ``name`` in ``lang`` into ``directory``; refuses to
    overwrite any."""
    if not NAME.fullmatch(name):
        raise UsageError(f"{name!r} is not a tool name: lowercase letters, digits and _")
    if lang not in LANGUAGES:
        raise UsageError(f"{lang!r} is not one of {', '.join(LANGUAGES)}")
    if lang == "python" and name in sys.stdlib_module_names:
        raise UsageError(f"{name!r} is a module of Python's standard library: choose another name")
    if lang != "c" and name in {"tool_app", "tool_name", "sandbox", "wit_world"}:
        raise UsageError(f"{name!r} is the name of a module of the build: choose another name")
    suffix, code = LANGUAGES[lang]
    source = directory / f"{name}{suffix}"
    script = directory / f"build_{name}.sh"
    files = {
        source: code.format(name=name),
        directory / f"{name}.json": json.dumps(declaration(name, lang), indent=2) + "\n",
        script: '#!/bin/sh\ncd "$(dirname "$0")" || exit 1\nexec '
        + shlex.join(build_command(Path(source.name)))
        + "\n",
    }
    existing = [path for path in files if path.exists()]
    if existing:
        raise UsageError(f"{existing[0]} exists; not overwriting it")
    directory.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        _write_whole(path, text, 0o755 if path == script else 0o644)
    return list(files)


def _write_whole(path: Path, text: str, mode: int) -> None:
    """Write ``path`` by one rename, so that it is never seen half written."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(name, mode)
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``new-tool`` command's arguments."""
    parser = commands.add_parser("new-tool", help="write the files of a new guest tool")
    parser.add_argument("name", help="the tool's name")
    parser.add_argument(
        "--dir", type=Path, default=Path("."), help="where to write them (default: here)"
    )
    parser.add_argument(
        "--lang",
        choices=tuple(LANGUAGES),
        default="c",
        help="the language of its code (default: c)",
    )


def run_new_tool(args: argparse.Namespace) -> int:
    """Write the files; 0, or 2 with a one-line error."""
    try:
        written = new_tool(args.name, args.dir, args.lang)
    except (UsageError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    print(f"build it: {written[-1]}")
    return 0
