"""Import the whole pure-Python standard library, and the bundled packages, at build time.

The component holds only what its build-time snapshot holds: the directories the build
mapped in (``/python``, the standard library, and the bundled packages) are gone at run
time, so a module not imported here cannot be imported by the code (measured: ``import
xml`` failed with ``ModuleNotFoundError`` in a build that imported only ``ast``). Every
module is therefore imported now, except :data:`SKIP`: test suites, GUI and REPL tooling,
installers, and modules with import-time effects. Modules whose C part the WASI build of
CPython lacks (``ssl``, ``ctypes``, ``bz2``, ``lzma``, ``multiprocessing``...) fail to
import and stay absent; :data:`FAILED` records them.

The bundled packages' top-level names come from :mod:`bundle`, a module the build writes
beside the app (none when the build bundles nothing but ``tzdata``).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator

import sandbox  # noqa: F401  (first: its fixes apply to everything imported here)

SKIP = frozenset(
    {
        "__hello__", "__main__", "__phello__", "_pyrepl", "antigravity", "ensurepip",
        "idlelib", "lib2to3", "msilib", "pydoc", "pydoc_data", "test", "this", "tkinter",
        "_tkinter", "turtle", "turtledemo", "venv",
    }
)  # fmt: skip
"""Top-level names never imported: tests, GUI, REPL, installers, easter eggs that print."""

IMPORTED: list[str] = []
"""The modules imported here, in order."""

FAILED: dict[str, str] = {}
"""The modules that could not be imported, with the first words of their error."""


def _modules(root: str, prefix: str = "") -> Iterator[str]:
    """The dotted names of the modules and packages under directory ``root``."""
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if name.endswith(".py") and name not in ("__init__.py", "__main__.py"):
            yield prefix + name[:-3]
        elif os.path.isfile(os.path.join(path, "__init__.py")) and "-" not in name:
            yield prefix + name
            yield from _modules(path, f"{prefix}{name}.")


def _skipped(module: str) -> bool:
    parts = module.split(".")
    return parts[0] in SKIP or any(
        part in ("test", "tests") or part.startswith("test_") for part in parts[1:]
    )


def _import_all(names: Iterator[str]) -> None:
    for module in names:
        if _skipped(module):
            continue
        try:
            importlib.import_module(module)
        except BaseException as exc:  # SystemExit too: nothing may stop the build
            FAILED[module] = f"{type(exc).__name__}: {exc}"[:120]
        else:
            IMPORTED.append(module)


def stdlib_root() -> str:
    """The directory of the standard library in the build's path (``/python``)."""
    for entry in sys.path:
        if os.path.isfile(os.path.join(entry, "os.py")):
            return entry
    raise RuntimeError(f"no standard library in {sys.path}")


def _bundled() -> tuple[str, ...]:
    try:
        from bundle import PACKAGES  # type: ignore[import-not-found]  # written by the build
    except ImportError:
        return ()
    names: tuple[str, ...] = PACKAGES
    return names


_import_all(_modules(stdlib_root()))
for _package in _bundled():
    _import_all(iter([_package]))
    _spec = sys.modules.get(_package)
    for _path in getattr(_spec, "__path__", ()):
        _import_all(_modules(_path, f"{_package}."))
