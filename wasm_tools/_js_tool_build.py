"""Build an operator's tool written in JavaScript into a component of the ``toolcage:tool`` world.

``python -m toolcage.wasm_tools.build --js-tool NAME.js [--out DIR]`` reads the tool's
declaration ``NAME.json`` beside it and writes ``NAME.wasm``, which ``[guest_tools] dirs``
loads like a Python tool's component: the same declaration checks, and a component
importing beyond its grants is refused at load.

The build is the Python tool build's with another compiler. The world is the same
``granted`` world (:func:`._python_tool_build.world`: the interfaces of the declaration's
``needs``, and ``run``); the app is ``js/tool_app.js`` (the export around the tool's
``run``) with every ``*.js`` of the tool's folder; the compiler is the pinned
``@bytecodealliance/componentize-js`` (the StarlingMonkey engine), which npm installs once
per user under ``$XDG_CACHE_HOME/toolcage/componentize-js-VERSION/``. A build takes some
15 s and is cached per user like a Python tool's (:func:`._python_build.cached_build`,
folder ``js``), keyed by the files it is given, the compiler's version, the locked versions
of its npm dependencies and the features disabled.

componentize-js links two features of the engine to WASI interfaces the runtime does not
provide, so the build disables them (:data:`DISABLED`): ``http`` (``fetch``, importing
``wasi:http/types`` and ``wasi:http/outgoing-handler``; a tool reaches the network only
through the ``http`` interface and the egress policy) and ``fetch-event`` (serving
``wasi:http/incoming-handler``). What remains imports ``wasi:io``, ``wasi:clocks``,
``wasi:cli``, ``wasi:filesystem`` and ``wasi:random``, which ``add_wasip2`` links.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ._python_build import WIT, CacheEntry, ComponentBuildError, Placed, cached_build, content_key
from ._python_tool_build import WORLD, declared_needs, tool_main, world
from .build import cache_root

COMPONENTIZE_JS = "0.23.0"
"""The componentize-js release the glue is written for."""
PACKAGE = "@bytecodealliance/componentize-js"
CLI = Path("node_modules") / PACKAGE / "src" / "cli.js"
"""Its command line, in its install folder."""
DISABLED = ("http", "fetch-event")
"""Engine features built without: their WASI interfaces are not linked (module docstring)."""
TOOL_APP = Path(__file__).resolve().parent / "js" / "tool_app.js"
RESERVED = frozenset({"tool_app", "tool_name"})
"""Module names of the build's own files."""
KEEP_TOOLS = 8
"""Tool builds kept in the per-user cache (about 12 MB each), the most recently used."""


class JsBuildError(ComponentBuildError):
    """A JavaScript tool could not be built; the message says why."""


def componentize_js() -> tuple[Path, str]:
    """The command line of the pinned componentize-js, installed first if need be, and
    what identifies the install (the compiler's version and its locked dependencies)."""
    home = cache_root() / f"componentize-js-{COMPONENTIZE_JS}"
    if not (home / CLI).is_file():
        _install(home)
    lock = home / "node_modules" / ".package-lock.json"
    try:
        locked = hashlib.sha256(lock.read_bytes()).hexdigest()
    except OSError as exc:
        raise JsBuildError(f"{home} is not an npm install: {exc}") from exc
    return home / CLI, f"componentize-js=={COMPONENTIZE_JS} {locked}"


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise JsBuildError(
            f"{name} is not on PATH: Node.js and npm are needed to build a JavaScript tool"
        )
    return found


def _install(home: Path) -> None:
    """``npm install`` the pinned compiler into ``home``, by one rename: a concurrent
    install that wins leaves its folder, and this one is dropped."""
    npm = _tool("npm")
    home.parent.mkdir(parents=True, exist_ok=True)
    tmp = home.with_name(f".{home.name}-{os.getpid()}-{secrets.token_hex(4)}")
    tmp.mkdir()
    try:
        (tmp / "package.json").write_text('{"private": true}\n')
        command = [
            npm, "install", "--prefix", str(tmp), "--no-audit", "--no-fund",
            "--ignore-scripts", "--save-exact", f"{PACKAGE}@{COMPONENTIZE_JS}",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
        if done.returncode != 0 or not (tmp / CLI).is_file():
            raise JsBuildError(
                f"npm could not install {PACKAGE}@{COMPONENTIZE_JS}:\n"
                f"{(done.stdout + done.stderr)[-2000:]}"
            )
        try:
            tmp.rename(home)
        except OSError:
            if not (home / CLI).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def inputs(source: Path) -> dict[str, bytes]:
    """The files of the build of ``source`` by their path in its folder: the app (the
    tool's folder's modules, the export's glue) and the WIT (the world of its needs)."""
    name = source.stem
    if not source.is_file():
        raise JsBuildError(f"{source}: no such file")
    if source.suffix != ".js" or name in RESERVED:
        raise JsBuildError(
            f"{source}: a tool is a NAME.js module, not named {', '.join(sorted(RESERVED))}"
        )
    needs = declared_needs(source.with_suffix(".json"))
    files = {f"app/{module.name}": module.read_bytes() for module in source.parent.glob("*.js")}
    files |= {
        "app/tool_app.js": TOOL_APP.read_bytes(),
        "app/tool_name.js": f"export * as tool from {json.dumps(f'./{name}.js')};\n".encode(),
        "wit/tool.wit": (WIT / "tool.wit").read_bytes(),
        f"wit/{WORLD}.wit": world(needs).encode(),
    }
    return dict(sorted(files.items()))


def build_key(files: dict[str, bytes], compiler: str) -> str:
    """The cache key of a build of ``files`` by ``compiler`` (see :func:`componentize_js`)."""
    return content_key(files.items(), (), builder=f"{compiler} -d {' -d '.join(DISABLED)}")


def build_js_tool(source: Path, out_dir: Path | None = None, *, force: bool = False) -> Placed:
    """Build the tool ``NAME.js`` (its declaration ``NAME.json`` beside it) into
    ``OUT_DIR/NAME.wasm`` (beside the source by default); what it took (see
    :func:`~._python_build.cached_build`)."""
    files = inputs(source)
    cli, compiler = componentize_js()

    def make(built: Path, work: Path) -> None:
        for name, data in files.items():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_bytes(data)
        disabled = [flag for feature in DISABLED for flag in ("-d", feature)]
        command = [
            _tool("node"), str(cli), str(work / "app" / "tool_app.js"), "-w", str(work / "wit"),
            "-n", WORLD, *disabled, "-o", str(built),
        ]  # fmt: skip
        # Only what the build needs: no NODE_OPTIONS, no NODE_PATH, no npm settings.
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work)}
        done = subprocess.run(  # noqa: S603
            command, capture_output=True, text=True, env=env, cwd=work, check=False
        )
        if done.returncode != 0 or not built.is_file():
            raise JsBuildError(f"componentize-js failed:\n{(done.stdout + done.stderr)[-4000:]}")

    key = build_key(files, compiler)
    entry = CacheEntry(f"tool-{source.stem}-{key}.wasm", "tool-*.wasm", KEEP_TOOLS, folder="js")
    target = (source.parent if out_dir is None else out_dir) / f"{source.stem}.wasm"
    return cached_build(entry, target, make, force=force, link=False)


def main(args: Sequence[str]) -> int:
    """Command line: ``... --js-tool NAME.js [--out DIR]``."""
    return tool_main(args, "--js-tool", build_js_tool)
