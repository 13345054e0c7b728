"""``toolcage call`` as uid 65534, for a test run as root.

The interpreter's own files may be unreadable to an unprivileged uid (here they sit under
root's home), so nothing can be imported after the drop. ``record`` makes the call as root
and writes every module imported, in import order; ``drop`` imports those, drops to uid and
gid 65534 with ``HOME`` set to the given directory (and no ``XDG_CACHE_HOME``), and makes
the call with the remaining arguments.

    python call_as_nobody.py record MODULES -- CALL-ARGS
    python call_as_nobody.py drop MODULES HOME -- CALL-ARGS
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
    code = main(["call", *args])
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
    return main(["call", *args])


if __name__ == "__main__":
    mode, modules, *rest = sys.argv[1:]
    split = rest.index("--")
    args = rest[split + 1 :]
    sys.exit(record(modules, args) if mode == "record" else drop(modules, rest[0], args))
