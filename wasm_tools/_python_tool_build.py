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
It takes some 10 s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ._python_build import GUEST, PYTHON, WIT, PythonBuildError, componentize, installed

TOOL_APP = PYTHON / "tool"
WORLD = "granted"
INTERFACES = ("fs", "http", "clock", "log", "progress", "memory", "scratchpad", "scheduler")
"""The capabilities of ``tool.wit``, each an interface of the same name."""
NOT_IMPORTS = frozenset({"mounts"})
"""Needs that are no import (the mounts are WASI preopens)."""


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
        raise PythonBuildError(f"{declaration}: cannot read the declaration: {exc}") from exc
    needs = raw.get("needs", []) if isinstance(raw, dict) else None
    if not isinstance(needs, list):
        raise PythonBuildError(f"{declaration}: needs: must be a list")
    for index, need in enumerate(needs):
        if need not in INTERFACES and need not in NOT_IMPORTS:
            offered = ", ".join(sorted({*INTERFACES, *NOT_IMPORTS}))
            raise PythonBuildError(
                f"{declaration}: needs[{index}]: {need!r} is not offered to a Python tool"
                f" (one of {offered})"
            )
    return [str(need) for need in needs]


def build_python_tool(source: Path, out_dir: Path | None = None) -> Path:
    """Build the tool ``NAME.py`` (its declaration ``NAME.json`` beside it) into
    ``OUT_DIR/NAME.wasm`` (beside the source by default)."""
    name = source.stem
    if not source.is_file():
        raise PythonBuildError(f"{source}: no such file")
    if name in {"tool_app", "tool_name", "sandbox", "wit_world"} | sys.stdlib_module_names:
        raise PythonBuildError(
            f"{source}: {name!r} is the name of a module of the build or the standard library"
        )
    needs = declared_needs(source.with_suffix(".json"))
    target = (source.parent if out_dir is None else out_dir) / f"{name}.wasm"
    with tempfile.TemporaryDirectory(prefix="toolcage-pytool-") as tmp:
        work = Path(tmp)
        wit, app = work / "wit", work / "app"
        wit.mkdir()
        shutil.copy(WIT / "tool.wit", wit / "tool.wit")
        (wit / "granted.wit").write_text(world(needs), encoding="utf-8")
        app.mkdir()
        for module in sorted(source.parent.glob("*.py")):
            shutil.copy(module, app / module.name)
        shutil.copy(GUEST / "sandbox.py", app / "sandbox.py")
        shutil.copy(TOOL_APP / "tool_app.py", app / "tool_app.py")
        (app / "tool_name.py").write_text(f'"""The tool\'s module."""\n\nNAME = {name!r}\n')
        built = work / f"{name}.wasm"
        componentize(app, "tool_app", wit, WORLD, [installed("tzdata")], built, work)
        target.parent.mkdir(parents=True, exist_ok=True)
        built.chmod(0o644)
        shutil.move(built, target)  # one rename when on the same file system
    return target


def main(args: Sequence[str]) -> int:
    """Command line: ``... --python-tool NAME.py [--out DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m toolcage.wasm_tools.build --python-tool")
    parser.add_argument("--python-tool", type=Path, required=True, help="the tool's NAME.py")
    parser.add_argument("--out", type=Path, help="directory of NAME.wasm (the source's)")
    options = parser.parse_args(args)
    try:
        built = build_python_tool(options.python_tool, options.out)
    except PythonBuildError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"built {built}")
    return 0
