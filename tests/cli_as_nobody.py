"""A ``toolcage`` command line as uid 65534, for a test run as root.

An unprivileged uid may not be able to read the interpreter's own files (here they sit
under root's home), so nothing can be imported after the drop. ``record`` runs the command
as root and writes every module it imported, in import order; ``drop`` imports those, drops
to uid and gid 65534 with ``HOME`` in a directory of theirs (and no ``XDG_CACHE_HOME``),
moves there, and runs the command again.

    python cli_as_nobody.py record MODULES -- COMMAND-LINE
    python cli_as_nobody.py drop MODULES HOME -- COMMAND-LINE
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys

from toolcage.runtime.cli._main import main

NOBODY = 65534


def record(modules: str, args: list[str]) -> int:
    code = main(args)
    with open(modules, "w") as out:
        json.dump(list(sys.modules), out)
    return code


def drop(modules: str, home: str, args: list[str]) -> int:
    with open(modules) as names:
        for name in json.load(names):
            with contextlib.suppress(BaseException):
                importlib.import_module(name)
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)
    os.environ["HOME"] = home
    os.environ.pop("XDG_CACHE_HOME", None)
    os.chdir(home)
    return main(args)


if __name__ == "__main__":
    mode, modules, *rest = sys.argv[1:]
    split = rest.index("--")
    args = rest[split + 1 :]
    sys.exit(record(modules, args) if mode == "record" else drop(modules, rest[0], args))
