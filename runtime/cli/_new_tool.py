"""``toolcage new-tool NAME``: the files of a new operator guest tool.

It writes ``NAME.c`` (a read-only tool that reads one file through the host's ``fs``
binding), its declaration ``NAME.json`` and ``build_NAME.sh``, which compiles it with the pinned
zig and the SDK shipped in the package (``python -m toolcage.wasm_tools.build --tool``).
Name the directory in ``[guest_tools] dirs`` and the built tool loads with the built-ins.
The guest ABI is described in ``toolcage/wasm_tools/sdk/README.md``.
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


def declaration(name: str) -> dict[str, object]:
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
        "needs": ["fs"],
    }


def build_command(source: Path) -> list[str]:
    """The command that compiles ``source`` into the module beside it."""
    return [sys.executable, "-m", "toolcage.wasm_tools.build", "--tool", str(source)]


def new_tool(name: str, directory: Path) -> list[Path]:
    """Write the files of tool ``name`` into ``directory``; refuses to overwrite any."""
    if not NAME.fullmatch(name):
        raise UsageError(f"{name!r} is not a tool name: lowercase letters, digits and _")
    source = directory / f"{name}.c"
    script = directory / f"build_{name}.sh"
    files = {
        source: SOURCE.format(name=name),
        directory / f"{name}.json": json.dumps(declaration(name), indent=2) + "\n",
        script: '#!/bin/sh\ncd "$(dirname "$0")" || exit 1\nexec '
        + shlex.join(build_command(Path(f"{name}.c")))
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


def run_new_tool(args: argparse.Namespace) -> int:
    """Write the files; 0, or 2 with a one-line error."""
    try:
        written = new_tool(args.name, args.dir)
    except (UsageError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    print(f"build it: {written[-1]}")
    return 0
