"""The build backend: setuptools, plus the guest tools compiled into every wheel.

A wheel built from a clean tree (``pip wheel .``, ``pip install .``) carries
``toolcage/wasm_tools/modules/*.wasm``: the C guests compiled by ``wasm_tools/build.py``
with the ``ziglang`` pinned in the ``dev`` extra, and ``python_exec.wasm`` built by
``wasm_tools/_python_build.py`` with the pinned ``componentize-py`` and ``tzdata`` (taken
from the per-user cache when the same inputs were built before), and the shell sidecar's
session runner ``toolcage/sidecar/runner/toolcage-runner``, a static binary built by
``wasm_tools/_runner_build.py`` with the same zig for the machine the wheel is built on.
Only a wheel asks for them as build requirements: an editable install (``make install``)
skips the builds, since ``make wasm`` builds them in the tree with the tools of the
virtualenv.
"""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path
from types import ModuleType

from setuptools import build_meta
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent

build_sdist = build_meta.build_sdist
build_wheel = build_meta.build_wheel
build_editable = build_meta.build_editable
get_requires_for_build_sdist = build_meta.get_requires_for_build_sdist
get_requires_for_build_editable = build_meta.get_requires_for_build_editable
prepare_metadata_for_build_wheel = build_meta.prepare_metadata_for_build_wheel
prepare_metadata_for_build_editable = build_meta.prepare_metadata_for_build_editable


GUEST_TOOLS = ("ziglang", "componentize-py", "tzdata")
"""The ``dev`` pins a wheel build needs: zig for the C guests, componentize-py and the
bundled tzdata for python_exec."""


def dev_requirement(name: str) -> str:
    """The pin of ``name`` in the ``dev`` extra of ``pyproject.toml``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    dev: list[str] = project["optional-dependencies"]["dev"]
    return next(pin for pin in dev if pin.startswith(f"{name}=="))


def get_requires_for_build_wheel(config_settings: dict[str, str] | None = None) -> list[str]:
    """setuptools' requirements, and the tools that build the guests."""
    return [
        *build_meta.get_requires_for_build_wheel(config_settings),
        *(dev_requirement(name) for name in GUEST_TOOLS),
    ]


PACKAGE = "_toolcage_wasm_tools"
"""The tree's ``wasm_tools`` folder, imported under this name while the wheel builds (the
``toolcage`` package is not importable then)."""


def _guest_build(name: str = "build") -> ModuleType:
    """``wasm_tools/NAME.py`` of this tree, a module of :data:`PACKAGE` (so that its relative
    imports of the other build modules work)."""
    if PACKAGE not in sys.modules:
        folder = ROOT / "wasm_tools"
        spec = importlib.util.spec_from_file_location(
            PACKAGE, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )
        if spec is None or spec.loader is None:
            raise ImportError("wasm_tools/__init__.py cannot be loaded")
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{PACKAGE}.{name}")


class BuildPy(build_py):
    """``build_py`` that also compiles the guest tools into the built package."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        build = _guest_build()
        out = Path(self.build_lib, "toolcage", "wasm_tools", "modules")
        build.build_all(out_dir=out)
        _guest_build("_python_build").build_default(out=out / "python_exec.wasm")
        runner = Path(self.build_lib, "toolcage", "sidecar", "runner", "toolcage-runner")
        _guest_build("_runner_build").build_runner(runner, force=True)
        sources = {source.stem for source in build.TOOLS.glob("*.c")} | {
            *build.SHARED,
            "python_exec",
        }
        missing = sources - {module.stem for module in out.glob("*.wasm")}
        if not sources or missing:
            raise build.BuildError(f"no guest sources, or modules missing: {sorted(missing)}")
