"""The build backend: setuptools, plus the guest tools compiled into every wheel.

A wheel built from a clean tree (``pip wheel .``, ``pip install .``) carries
``toolcage/wasm_tools/modules/*.wasm``, compiled by ``wasm_tools/build.py`` with the
``ziglang`` pinned in the ``dev`` extra. Only a wheel asks for ziglang as a build
requirement: an editable install (``make install``) skips the compile, since ``make wasm``
builds the modules in the tree with the ziglang of the virtualenv.
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


def zig_requirement() -> str:
    """The ``ziglang`` pin of the ``dev`` extra in ``pyproject.toml``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    dev: list[str] = project["optional-dependencies"]["dev"]
    return next(pin for pin in dev if pin.startswith("ziglang"))


def get_requires_for_build_wheel(config_settings: dict[str, str] | None = None) -> list[str]:
    """setuptools' requirements, and ziglang to compile the guests."""
    return [*build_meta.get_requires_for_build_wheel(config_settings), zig_requirement()]


def _guest_build() -> ModuleType:
    """``wasm_tools/build.py`` of this tree (the package is not importable while it builds)."""
    spec = importlib.util.spec_from_file_location(
        "_toolcage_guest_build", ROOT / "wasm_tools" / "build.py"
    )
    if spec is None or spec.loader is None:
        raise ImportError("wasm_tools/build.py cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class BuildPy(build_py):
    """``build_py`` that also compiles the guest tools into the built package."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        build = _guest_build()
        out = Path(self.build_lib, "toolcage", "wasm_tools", "modules")
        build.build_all(out_dir=out)
        sources = {source.stem for source in build.TOOLS.glob("*.c")} | set(build.SHARED)
        missing = sources - {module.stem for module in out.glob("*.wasm")}
        if not sources or missing:
            raise build.BuildError(f"no guest sources, or modules missing: {sorted(missing)}")
