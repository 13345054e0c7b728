"""Linking host bindings, finding modules, the compile cache, declarations."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import wasmtime
from toolcage.host_bindings import CallState, current_call
from toolcage.runtime import Runtime, UsageError
from toolcage.runtime.wasm import (
    GuestLimits,
    ModuleCache,
    ModuleMissingError,
    WasmEngine,
    WasmToolRunner,
    WasmToolSpec,
    discover_specs,
)
from toolcage.runtime.wasm._modules import module_bytes

pytestmark = pytest.mark.anyio


class PingBinding:
    """toolcage_test_v1.ping(x): x + the length of the running tool's name."""

    name = "test"

    def define(self, linker: wasmtime.Linker) -> None:
        i32 = wasmtime.ValType.i32()
        linker.define_func(
            "toolcage_test_v1",
            "ping",
            wasmtime.FuncType([i32], [i32]),
            lambda x: x + len(current_call.get().tool_name),
        )


class TestHostBindings:
    async def test_ungranted_import_fails_to_link_with_its_name(
        self, runner: WasmToolRunner
    ) -> None:
        with pytest.raises(UsageError, match=r"ping.*toolcage_test_v1|toolcage_test_v1.*ping"):
            await runner.run("ping", b"", (), GuestLimits(timeout=5))

    async def test_granted_binding_sees_the_current_call(self, runner: WasmToolRunner) -> None:
        state = CallState("ping", 0.0, lambda m, f: None, lambda lvl, m: None)
        result = await runner.run(
            "ping", b"", (), GuestLimits(timeout=5), bindings=[PingBinding()], state=state
        )
        assert result.output_text == str(2 + len("ping"))


class TestModules:
    def test_missing_module_says_how_to_build(self) -> None:
        with pytest.raises(ModuleMissingError, match="make wasm"):
            module_bytes("no_such_tool")

    def test_stale_module_is_refused(self) -> None:
        source = Path(__file__).parents[3] / "wasm_tools" / "tools" / "file_read.c"
        module = source.parents[1] / "modules" / "file_read.wasm"
        built = module.stat().st_mtime_ns
        try:
            os.utime(module, ns=(built, source.stat().st_mtime_ns - 10**9))
            with pytest.raises(ModuleMissingError, match="older than its source"):
                module_bytes("file_read")
        finally:
            os.utime(module, ns=(built, built))

    @pytest.mark.parametrize(
        "changed",
        [
            "tools/web_fetch/page.c",  # a file of a tool split into several
            "tools/web_fetch",  # a file added to or removed from it
            "vendor/lexbor/source/lexbor/html",  # the library it links, updated
        ],
    )
    def test_a_module_is_stale_when_any_of_its_build_inputs_is_newer(self, changed: str) -> None:
        package = Path(__file__).parents[3] / "wasm_tools"
        module_bytes("web_fetch")  # fresh before
        path = package / changed
        stat = path.stat()
        built = (package / "modules" / "web_fetch.wasm").stat().st_mtime_ns
        try:
            os.utime(path, ns=(stat.st_atime_ns, built + 10**9))
            with pytest.raises(
                ModuleMissingError, match=r"web_fetch\.wasm is older than its source"
            ):
                module_bytes("web_fetch")
        finally:
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        module_bytes("web_fetch")

    async def test_a_call_of_a_stale_module_says_how_to_rebuild(self, tmp_path: Path) -> None:
        package = Path(__file__).parents[3] / "wasm_tools"
        path = package / "tools" / "web_fetch" / "page.c"
        stat = path.stat()
        built = (package / "modules" / "web_fetch.wasm").stat().st_mtime_ns
        (tmp_path / "workspace").mkdir()
        (tmp_path / "toolcage.toml").write_text("")
        try:
            os.utime(path, ns=(stat.st_atime_ns, built + 10**9))
            async with Runtime.from_config(tmp_path / "toolcage.toml") as runtime:
                result = await runtime.execute("web_fetch", {"url": "http://127.0.0.1:9/"})
        finally:
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        assert result.is_error
        assert "web_fetch.wasm is older than its source" in result.output_text
        assert "make wasm" in result.output_text

    def test_compiled_once_then_loaded_from_disk(self, tmp_path: Path) -> None:
        wasm = module_bytes("file_read")
        with WasmEngine() as engine:
            ModuleCache(engine.engine, tmp_path).compile(wasm)
            (cached,) = tmp_path.glob("*.cwasm")
            stamp = cached.stat().st_mtime_ns
            module = ModuleCache(engine.engine, tmp_path).compile(wasm)
            assert cached.stat().st_mtime_ns == stamp
            assert any(e.name == "_start" for e in module.exports)

    def test_corrupt_cache_entry_is_recompiled(self, tmp_path: Path) -> None:
        wasm = module_bytes("file_read")
        with WasmEngine() as engine:
            ModuleCache(engine.engine, tmp_path).compile(wasm)
            (cached,) = tmp_path.glob("*.cwasm")
            cached.write_bytes(b"garbage")
            ModuleCache(engine.engine, tmp_path).compile(wasm)
            assert cached.read_bytes() != b"garbage"


class TestDeclarations:
    def test_every_file_tool_is_declared_with_paths(self) -> None:
        specs = {s.decl.name: s for s in discover_specs()}
        for name in ("file_read", "file_list", "file_search", "file_write", "file_edit"):
            assert "path" in specs[name].path_arguments
        assert specs["file_read"].path_arguments["path"] == "read"
        assert specs["file_write"].path_arguments["path"] == "write"

    def test_bad_declaration_names_its_file(self) -> None:
        with pytest.raises(UsageError, match=r"bad WASM tool declaration x\.json"):
            WasmToolSpec.from_json('{"name": "x"}', "x.json")

    def test_a_relay_of_a_capability_not_needed_is_refused_naming_its_file(self) -> None:
        declaration = {
            "name": "x",
            "description": "reads the pad",
            "parameters": {"type": "object"},
            "safety_tier": "read_only",
            "timeout": 5,
            "needs": ["memory"],
            "relay": "scratchpad.read",
        }
        with pytest.raises(
            UsageError,
            match=r"bad WASM tool declaration x\.json: relay 'scratchpad\.read': "
            r"capability 'scratchpad' is not in its needs",
        ):
            WasmToolSpec.from_json(json.dumps(declaration), "x.json")
        for relay in ("memory", "memory.", ".save", 3):
            with pytest.raises(UsageError, match=r"x\.json: relay must be 'capability\.call'"):
                WasmToolSpec.from_json(json.dumps({**declaration, "relay": relay}), "x.json")

    def test_the_state_tools_are_relays_of_a_capability_they_need(self) -> None:
        relays = {s.decl.name: s for s in discover_specs() if s.relay is not None}
        kinds = {name.split("_")[0] for name in relays}
        assert kinds == {"memory", "scratchpad", "schedule", "send", "vault"}
        assert len(relays) == 15
        for spec in relays.values():
            assert spec.relay is not None
            assert spec.relay[0] in spec.needs
            assert spec.module == "relay"
