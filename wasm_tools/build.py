"""Compile the guest tools to WASI preview-1 command modules with the pinned zig.

``python -m toolcage.wasm_tools.build`` (``make wasm``) compiles every ``tools/NAME.c``,
together with the guest SDK in ``sdk/``, into ``modules/NAME.wasm``. A module is rebuilt
only when it is older than its source or any SDK file, so reruns cost nothing.

The modules ship as package data; an installed toolcage reads them with
:mod:`importlib.resources` and never compiles anything.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = HERE / "tools"
SDK = HERE / "sdk"
MODULES = HERE / "modules"

ZIG_TARGET = "wasm32-wasi"
"""zig 0.17 still spells WASI preview 1 ``wasm32-wasi`` (``wasm32-wasip1`` is clang's name)."""


class BuildError(RuntimeError):
    """A guest failed to compile; the message carries the compiler's output."""


def sdk_sources() -> list[Path]:
    """The SDK's C files, linked into every tool (the linker drops what a tool does not use)."""
    return sorted(SDK.glob("*.c"))


def sdk_inputs() -> list[Path]:
    """Every SDK file a module depends on (sources and headers)."""
    return sorted([*SDK.glob("*.c"), *SDK.glob("*.h")])


def is_stale(out: Path, inputs: Iterable[Path]) -> bool:
    """Whether ``out`` is missing or older than any of ``inputs``."""
    if not out.is_file():
        return True
    built = out.stat().st_mtime_ns
    return any(path.stat().st_mtime_ns > built for path in inputs)


def compile_guest(sources: Sequence[Path], out: Path, *, include: Sequence[Path] = (SDK,)) -> Path:
    """Compile ``sources`` into the command module ``out`` (``-O2``, stripped)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    command = [
        sys.executable,
        "-m",
        "ziglang",
        "cc",
        f"--target={ZIG_TARGET}",
        "-std=c11",
        "-D_DEFAULT_SOURCE",  # memmem, strdup and friends of wasi-libc (musl)
        "-O2",
        "-s",
        # zig's default 16 MiB shadow stack would be most of a guest's memory limit.
        "-Wl,-z,stack-size=1048576",
        "-Wall",
        "-Werror",
        *(f"-I{path}" for path in include),
        *(str(path) for path in sources),
        "-o",
        str(tmp),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise BuildError(f"compiling {out.name} failed:\n{done.stderr}")
    tmp.replace(out)
    return out


def build_all(*, force: bool = False, out_dir: Path = MODULES) -> list[Path]:
    """Build every stale tool module; the modules that were (re)built."""
    built: list[Path] = []
    sdk = sdk_inputs()
    for source in sorted(TOOLS.glob("*.c")):
        out = out_dir / f"{source.stem}.wasm"
        if force or is_stale(out, [source, *sdk]):
            compile_guest([source, *sdk_sources()], out)
            built.append(out)
    return built


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m toolcage.wasm_tools.build [--force]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        built = build_all(force="--force" in args)
    except BuildError as exc:
        print(exc, file=sys.stderr)
        return 1
    for path in built:
        print(f"built {path.relative_to(HERE.parent)}")
    if not built:
        print("wasm modules are up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
