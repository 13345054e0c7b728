"""The ``fs`` binding as the only wall: a guest that calls it directly, past the path policy.

``sdk_guests/fs_probe.c`` is registered as a read-only tool of a real runtime with the ``fs``
binding the runtime gave ``file_read``, and no path arguments, so nothing checks its paths
before the binding does. Whatever it asks, it reaches only the mounts granted to its call
(its tool and tier), links that stay beneath them, and regular files; it never blocks on a
FIFO, never writes, and every descriptor it opened is closed when it has ended.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType

import pytest
import wasmtime
from toolcage.runtime import FunctionDecl, Runtime, SafetyTier, ToolResult
from toolcage.runtime.wasm import GuestLimits, WasmTool, WasmToolSpec
from toolcage.wasm_tools.build import SDK, build_cached, sdk_sources

pytestmark = pytest.mark.anyio

PROBE = Path(__file__).parent / "sdk_guests/fs_probe.c"
SECRET = "fs-binding-sentinel"  # noqa: S105 (a sentinel, not a password)
NOT_READABLE = "is not readable here (no permission)"

CONFIG = """
[[mounts.areas]]
host = "ws"
guest = "/workspace"
tiers = { read_only = "ro", side_effecting = "rw" }

[[mounts.areas]]
host = "private"
guest = "/private"
tiers = { side_effecting = "rw" }
"""

PARAMETERS = {
    "type": "object",
    "properties": {
        "op": {"type": "string"},
        "path": {"type": "string"},
        "name": {"type": "string"},
    },
}


def register(runtime: Runtime, name: str, wasm: bytes | bytearray, *, fs: bool = True) -> None:
    """Register ``wasm`` as read-only tool ``name`` needing ``fs`` (granted when ``fs``)."""
    reader = runtime.registry.get("file_read")
    assert isinstance(reader, WasmTool)
    reader.runner.modules.add(name, bytes(wasm))
    spec = WasmToolSpec(
        decl=FunctionDecl(name, f"The test guest {name}.", PARAMETERS),
        safety_tier=SafetyTier.READ_ONLY,
        timeout=30,
        path_arguments=MappingProxyType({}),
        needs=("fs",),
    )
    bindings = reader.bindings if fs else ()
    tool = WasmTool(spec, reader.runner, reader.mounts, bindings=bindings, limits=GuestLimits(30))
    runtime.register(tool)


class Probe:
    def __init__(self, runtime: Runtime, root: Path) -> None:
        self.runtime = runtime
        self.root = root

    async def __call__(self, op: str, path: str, name: str | None = None) -> ToolResult:
        args = {"op": op, "path": path} if name is None else {"op": op, "path": path, "name": name}
        result = await self.runtime.execute("fs_probe", args)
        assert SECRET not in result.output_text
        return result

    async def ok(self, op: str, path: str, name: str | None = None) -> str:
        result = await self(op, path, name)
        assert result.error is None, result.output_text
        return result.output_text

    async def refused(self, op: str, path: str, name: str | None = None) -> str:
        result = await self(op, path, name)
        assert result.error is not None, result.output_text
        return result.error.message


@pytest.fixture
async def probe(tmp_path: Path) -> AsyncIterator[Probe]:
    root = tmp_path.resolve()  # noqa: ASYNC240 (set-up, before anything runs)
    for name in ("ws/sub", "private", "outside/dir"):
        (root / name).mkdir(parents=True)
    (root / "ws/a.txt").write_text("inside")
    (root / "ws/sub/b.txt").write_text("deeper")
    (root / "private/p.txt").write_text(SECRET)
    (root / "outside/secret").write_text(SECRET)
    (root / "outside/dir/secret").write_text(SECRET)
    (root / "toolcage.toml").write_text(CONFIG)
    (module,) = build_cached([PROBE, *sdk_sources()], include=[SDK])
    async with Runtime.from_config(root / "toolcage.toml") as runtime:
        register(runtime, "fs_probe", module.read_bytes())
        yield Probe(runtime, root)


class TestOnlyTheCallsMounts:
    async def test_reads_and_lists_inside(self, probe: Probe) -> None:
        assert await probe.ok("read", "/workspace/a.txt") == "inside"
        assert await probe.ok("read_many", "/workspace/sub", "b.txt") == "deeper"
        assert sorted((await probe.ok("list", "/workspace")).split()) == ["a.txt", "sub"]
        assert await probe.ok("opendir_at", "/workspace", "sub") == "opened"
        assert await probe.ok("stat", "/workspace/a.txt") == "type 1 size 6"

    @pytest.mark.parametrize(
        "path",
        [
            "/workspace/../outside/secret",
            "/workspace/sub/../../outside/secret",
            "/workspace/sub/../../../../../../outside/secret",
            "/outside/secret",
            "/private/p.txt",  # a mount of another tier
            "/",
            "relative/a.txt",
        ],
    )
    async def test_paths_out_of_the_mounts_are_refused(self, probe: Probe, path: str) -> None:
        resolved = path.replace("/outside/", f"{probe.root}/outside/")
        for asked in {path, resolved}:
            assert NOT_READABLE in await probe.refused("read", asked)
            assert NOT_READABLE in await probe.refused("list", asked)

    async def test_dot_dot_that_stays_beneath_works(self, probe: Probe) -> None:
        assert await probe.ok("read", "/workspace/sub/../a.txt") == "inside"

    @pytest.mark.parametrize("name", ["..", "../outside/secret", "sub/../../outside/secret"])
    async def test_names_cannot_climb_out_of_their_directory(self, probe: Probe, name: str) -> None:
        await probe.refused("read_many", "/workspace", name)
        await probe.refused("opendir_at", "/workspace", name)


class TestLinks:
    async def test_links_that_stay_beneath_are_followed(self, probe: Probe) -> None:
        (probe.root / "ws/link").symlink_to("sub/b.txt")
        (probe.root / "ws/sub/up").symlink_to("../a.txt")
        (probe.root / "ws/dirlink").symlink_to("sub")
        assert await probe.ok("read", "/workspace/link") == "deeper"
        assert await probe.ok("read", "/workspace/sub/up") == "inside"
        assert await probe.ok("read", "/workspace/dirlink/b.txt") == "deeper"

    @pytest.mark.parametrize("target", ["../outside/secret", "ABSOLUTE/outside/secret"])
    async def test_links_out_are_refused(self, probe: Probe, target: str) -> None:
        (probe.root / "ws/out").symlink_to(target.replace("ABSOLUTE", str(probe.root)))
        (probe.root / "ws/outdir").symlink_to(
            target.replace("ABSOLUTE", str(probe.root)).replace("secret", "dir")
        )
        assert NOT_READABLE in await probe.refused("read", "/workspace/out")
        assert NOT_READABLE in await probe.refused("read", "/workspace/outdir/secret")
        assert NOT_READABLE in await probe.refused("list", "/workspace/outdir")

    async def test_an_absolute_link_is_refused_even_to_inside(self, probe: Probe) -> None:
        # WASI's rule too: an absolute target names the host's tree, not the mount's.
        (probe.root / "ws/abs").symlink_to(probe.root / "ws/a.txt")
        assert NOT_READABLE in await probe.refused("read", "/workspace/abs")

    async def test_entries_are_never_followed(self, probe: Probe) -> None:
        (probe.root / "ws/link").symlink_to("a.txt")
        (probe.root / "ws/dirlink").symlink_to("sub")
        assert "symbolic link" in await probe.refused("read_many", "/workspace", "link")
        await probe.refused("opendir_at", "/workspace", "dirlink")


@contextmanager
def moving(source: Path, target: Path) -> Iterator[None]:
    """``source`` renamed to ``target`` and back without pause until the body ends."""
    stop = threading.Event()

    def move() -> None:
        while not stop.is_set():
            os.rename(source, target)
            os.rename(target, source)

    mover = threading.Thread(target=move)
    mover.start()
    try:
        yield
    finally:
        stop.set()
        mover.join()


class TestRaces:
    async def test_dot_dot_while_directories_move_out(self, probe: Probe) -> None:
        # ws/sub moves out of the mount and back while the probe climbs from inside it.
        (probe.root / "ws/sub/deep").mkdir()
        climbs = [
            ("read", "/workspace/sub/deep/../../../outside/secret", None),
            ("read_many", "/workspace/sub/deep", "../../../outside/secret"),
            ("read_many", "/workspace/sub", "../secret"),
            ("list", "/workspace/sub/deep/../../..", None),
        ]
        with moving(probe.root / "ws/sub", probe.root / "outside/sub"):
            for _ in range(50):
                for op, path, name in climbs:
                    await probe.refused(op, path, name)

    async def test_a_name_swapped_for_a_link_out(self, probe: Probe) -> None:
        race = probe.root / "ws/race"
        race.write_text("harmless")
        stop = threading.Event()

        def flip() -> None:
            tmp = probe.root / "ws/race.tmp"
            while not stop.is_set():
                tmp.symlink_to(probe.root / "outside/secret")
                os.replace(tmp, race)
                tmp.write_text("harmless")
                os.replace(tmp, race)

        flipper = threading.Thread(target=flip)
        flipper.start()
        try:
            for _ in range(100):
                for op, path, name in (
                    ("read", "/workspace/race", None),
                    ("read_many", "/workspace", "race"),
                ):
                    result = await probe(op, path, name)
                    assert result.error is not None or result.output_text == "harmless"
        finally:
            stop.set()
            flipper.join()


class TestNoBlockingNoWriting:
    async def test_a_fifo_is_refused_without_blocking(self, probe: Probe) -> None:
        os.mkfifo(probe.root / "ws/fifo")
        want = "probe: {} is not a regular file (a FIFO, socket or device)"
        assert await probe.refused("read", "/workspace/fifo") == want.format("/workspace/fifo")
        assert await probe.refused("read_many", "/workspace", "fifo") == want.format("fifo")

    async def test_a_directory_is_not_read_as_a_file(self, probe: Probe) -> None:
        message = await probe.refused("read", "/workspace/sub")
        assert message == "probe: /workspace/sub is a directory"
        assert await probe.refused("read_many", "/workspace", "sub") == "probe: sub is a directory"

    @pytest.mark.parametrize("name", ["write", "unlink", "rename", "mkdir", "open", "create"])
    async def test_there_is_nothing_to_write_with(self, probe: Probe, name: str) -> None:
        wasm = wasmtime.wat2wasm(
            f'(module (import "toolcage_fs_v1" "{name}" (func (param i32 i32) (result i32)))'
            ' (memory (export "memory") 1) (func (export "_start")))'
        )
        register(probe.runtime, "fs_writer", wasm)
        result = await probe.runtime.execute("fs_writer", {})
        assert result.error is not None
        assert result.error.kind.value == "permission_denied"
        assert "cannot be linked" in result.error.message

    async def test_descriptors_are_closed_when_the_guest_has_ended(self, probe: Probe) -> None:
        # The probe opens directory handles and never closes them.
        await probe.ok("opendir_at", "/workspace", "sub")  # warm every lazy open of the host
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(20):
            await probe.ok("opendir_at", "/workspace", "sub")
            await probe.ok("list", "/workspace")
        assert len(os.listdir("/proc/self/fd")) == before


class TestGrants:
    async def test_a_tool_not_granted_fs_cannot_link_it(self, probe: Probe) -> None:
        (module,) = build_cached([PROBE, *sdk_sources()], include=[SDK])
        register(probe.runtime, "fs_probe_ungranted", module.read_bytes(), fs=False)
        result = await probe.runtime.execute(
            "fs_probe_ungranted", {"op": "read", "path": "/workspace/a.txt"}
        )
        assert result.error is not None
        assert result.error.kind.value == "permission_denied"
        assert "toolcage_fs_v1" in result.error.message

    async def test_the_operator_can_take_fs_away_from_file_read(self, tmp_path: Path) -> None:
        (tmp_path / "ws").mkdir()
        (tmp_path / "ws/a.txt").write_text("x")
        (tmp_path / "toolcage.toml").write_text(CONFIG + "\n[egress.grants]\nfile_read = []\n")
        (tmp_path / "private").mkdir()
        async with Runtime.from_config(tmp_path / "toolcage.toml") as runtime:
            result = await runtime.execute("file_read", {"path": "/workspace/a.txt"})
            assert result.error is not None
            assert result.error.kind.value == "permission_denied"
            assert "cannot be linked" in result.error.message
            assert (await runtime.execute("file_list", {"path": "/workspace"})).error is None
