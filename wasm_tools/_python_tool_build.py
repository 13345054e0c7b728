"""Build an operator's tool written in Python into a component of the ``toolcage:tool`` world.

``python -m toolcage.wasm_tools.build --python-tool NAME.py [--out DIR]`` reads the tool's
declaration ``NAME.json`` beside it and writes ``NAME.wasm`` (beside it by default), which
``[guest_tools] dirs`` then loads like a C guest.

The component imports only what the declaration grants: the build writes a world of its
own, ``granted``, into a copy of ``tool.wit``, importing the interfaces of the
declaration's ``needs`` (and exporting ``run``), so componentize-py generates bindings for
those alone and the component imports nothing else but WASI -- the runtime refuses at
load a component importing more than its declaration grants.

The build is the ``python_exec`` build's (:func:`._python_build.componentize`: the pinned
componentize-py, a virtualenv holding only ``tzdata``): the app is ``python/tool/tool_app.py``
with the ``python_exec`` guest's ``sandbox.py`` and every ``*.py`` of the tool's folder.
It takes some 10 s, so it is cached per user as ``python_exec``'s is, by the hash of
exactly the files the build is given (:func:`inputs`), the bundled ``tzdata`` and the
componentize-py version: rebuilding an unchanged tool copies the cached component (or
does nothing when ``NAME.wasm`` is already it); ``--force`` builds anyway.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from ._python_build import (
    GUEST,
    PYTHON,
    WIT,
    CacheEntry,
    ComponentBuildError,
    Placed,
    PythonBuildError,
    cached_build,
    componentize,
    content_key,
    installed,
)

TOOL_APP = PYTHON / "tool"
WORLD = "granted"
INTERFACES = ("fs", "http", "clock", "log", "progress", "memory", "scratchpad", "scheduler")
"""The capabilities of ``tool.wit``, each an interface of the same name."""
NOT_IMPORTS = frozenset({"mounts"})
"""Needs that are no import (the mounts are WASI preopens)."""
KEEP_TOOLS = 8
"""Tool builds kept in the per-user cache (about 20 MB each), the most recently used."""


def world(needs: Sequence[str]) -> str:
    """The WIT of the world importing the interfaces of ``needs``."""
    imports = "".join(f"  import {need};\n" for need in INTERFACES if need in needs)
    return (
        "package toolcage:tool@0.1.0;\n\n"
        "/// What this tool's declaration grants, and its export.\n"
        f"world {WORLD} {{\n{imports}"
        "  export run: func(arguments: string) -> result<string, string>;\n}\n"
    )


def declared_needs(declaration: Path) -> list[str]:
    """The ``needs`` of a declaration, refused when one is not offered to components."""
    try:
        raw = json.loads(declaration.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ComponentBuildError(f"{declaration}: cannot read the declaration: {exc}") from exc
    needs = raw.get("needs", []) if isinstance(raw, dict) else None
    if not isinstance(needs, list):
        raise ComponentBuildError(f"{declaration}: needs: must be a list")
    for index, need in enumerate(needs):
        if need not in INTERFACES and need not in NOT_IMPORTS:
            offered = ", ".join(sorted({*INTERFACES, *NOT_IMPORTS}))
            raise ComponentBuildError(
                f"{declaration}: needs[{index}]: {need!r} is not offered to a component tool"
                f" (one of {offered})"
            )
    return [str(need) for need in needs]


def inputs(source: Path) -> dict[str, bytes]:
    """The files of the build of ``source`` by their path in its folder: the app (the
    tool's folder's modules, the world's glue) and the WIT (the world of its needs)."""
    name = source.stem
    if not source.is_file():
        raise PythonBuildError(f"{source}: no such file")
    if name in {"tool_app", "tool_name", "sandbox", "wit_world"} | sys.stdlib_module_names:
        raise PythonBuildError(
            f"{source}: {name!r} is the name of a module of the build or the standard library"
        )
    needs = declared_needs(source.with_suffix(".json"))
    files = {f"app/{module.name}": module.read_bytes() for module in source.parent.glob("*.py")}
    files |= {
        "app/sandbox.py": (GUEST / "sandbox.py").read_bytes(),
        "app/tool_app.py": (TOOL_APP / "tool_app.py").read_bytes(),
        "app/tool_name.py": f'"""The tool\'s module."""\n\nNAME = {name!r}\n'.encode(),
        "wit/tool.wit": (WIT / "tool.wit").read_bytes(),
        f"wit/{WORLD}.wit": world(needs).encode(),
    }
    return dict(sorted(files.items()))


def build_python_tool(source: Path, out_dir: Path | None = None, *, force: bool = False) -> Placed:
    """Build the tool ``NAME.py`` (its declaration ``NAME.json`` beside it) into
    ``OUT_DIR/NAME.wasm`` (beside the source by default); what it took (see
    :func:`~._python_build.cached_build`).

    A build is kept in the per-user cache by the hash of its inputs
    (:func:`~._python_build.content_key` of :func:`inputs` and the bundled ``tzdata``), so
    rebuilding an unchanged tool, or building it into another folder, copies the cache
    entry instead of running componentize-py again.
    """
    files = inputs(source)
    packages = [installed("tzdata")]
    key = content_key(files.items(), packages)

    def make(built: Path, work: Path) -> None:
        for name, data in files.items():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_bytes(data)
        componentize(work / "app", "tool_app", work / "wit", WORLD, packages, built, work)

    entry = CacheEntry(f"tool-{source.stem}-{key}.wasm", "tool-*.wasm", KEEP_TOOLS)
    target = (source.parent if out_dir is None else out_dir) / f"{source.stem}.wasm"
    # A copy, not a link: the operator's folder holds a file of its own.
    return cached_build(entry, target, make, force=force, link=False)


class ToolBuild(Protocol):
    """A language's build of one tool (:func:`build_python_tool`, ``build_js_tool``)."""

    def __call__(self, source: Path, out_dir: Path | None = None, *, force: bool = False) -> Placed:
        """Build ``source`` into ``OUT_DIR/NAME.wasm``; what it took."""


PLACED: dict[Placed, str] = {
    "built": "built {}",
    "cached": "{} is the cached build of these inputs",
    "current": "{} is up to date",
}
"""What the command line says of each outcome."""


def tool_main(args: Sequence[str], flag: str, build: ToolBuild) -> int:
    """Command line of a component tool's build: ``... FLAG NAME.EXT [--out DIR] [--force]``
    (``--python-tool NAME.py``, ``--js-tool NAME.js``), with ``build`` the language's."""
    parser = argparse.ArgumentParser(prog=f"python -m toolcage.wasm_tools.build {flag}")
    parser.add_argument(flag, dest="source", type=Path, required=True, help="the tool's source")
    parser.add_argument("--out", type=Path, help="directory of NAME.wasm (the source's)")
    parser.add_argument("--force", action="store_true", help="build even if it is cached")
    options = parser.parse_args(args)
    source, out_dir = options.source, options.out
    target = (source.parent if out_dir is None else out_dir) / f"{source.stem}.wasm"
    try:
        placed = build(source, out_dir, force=options.force)
    except ComponentBuildError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(PLACED[placed].format(target))
    return 0


def main(args: Sequence[str]) -> int:
    """Command line: ``... --python-tool NAME.py [--out DIR]``."""
    return tool_main(args, "--python-tool", build_python_tool)
