"""The wall around wasmtime-py's internals (``runtime/wasm/_capi.py``).

It checks three things: the installed wasmtime is the release the wall was written for, every
private symbol the wall touches still has the shape the wall relies on, and each wall
function does its job on real wasmtime objects. A failure here after a wasmtime upgrade
means: re-read ``_capi.py`` against the new wasmtime-py sources before trusting a guest run.
"""

from __future__ import annotations

import ast
import ctypes
import importlib.metadata
import inspect
import threading
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import wasmtime
from toolcage.runtime.wasm import _capi
from wasmtime import _bindings, _func, _wasi
from wasmtime import _ffi as ffi

REPO = Path(__file__).resolve().parents[3]
CAPI = REPO / "runtime" / "wasm" / "_capi.py"

RECHECK = (
    "runtime/wasm/_capi.py reaches past wasmtime-py's public API. Re-read each of its "
    "functions against the installed wasmtime-py (wasmtime/_bindings.py for the C signatures; "
    "_store.py, _instance.py, _extern.py, _wasi.py for the private attributes), fix what "
    "changed, then update the expected shapes in tests/runtime/wasm/test_capi.py and "
    "WASMTIME_VERSION in _capi.py together with the pin in pyproject.toml."
)

C_FUNCTIONS: dict[str, tuple[str, list[str]]] = {
    # name: (result, parameters) as wasmtime-py declares them, in the spelling of c_type()
    "wasmtime_instance_export_get": (
        "c_bool",
        [
            "wasmtime_context_t*",
            "wasmtime_instance_t*",
            "c_char*",
            "c_size_t",
            "wasmtime_extern_t*",
        ],
    ),
    "wasmtime_instance_pre_instantiate": (
        "wasmtime_error_t*",
        [
            "wasmtime_instance_pre_t*",
            "wasmtime_context_t*",
            "wasmtime_instance_t*",
            "wasm_trap_t**",
        ],
    ),
    "wasmtime_func_call": (
        "wasmtime_error_t*",
        [
            "wasmtime_context_t*",
            "wasmtime_func_t*",
            "wasmtime_val_t*",
            "c_size_t",
            "wasmtime_val_t*",
            "c_size_t",
            "wasm_trap_t**",
        ],
    ),
    "wasmtime_memory_data": ("c_uint8*", ["wasmtime_context_t*", "wasmtime_memory_t*"]),
    "wasmtime_memory_data_size": ("c_size_t", ["wasmtime_context_t*", "wasmtime_memory_t*"]),
    "wasmtime_store_new": ("wasmtime_store_t*", ["wasm_engine_t*", "c_void_p", "finalizer"]),
    "wasmtime_engine_increment_epoch": ("void", ["wasm_engine_t*"]),
    "wasmtime_store_context": ("wasmtime_context_t*", ["wasmtime_store_t*"]),
    "wasmtime_store_limiter": (
        "void",
        ["wasmtime_store_t*", "c_int64", "c_int64", "c_int64", "c_int64", "c_int64"],
    ),
    "wasmtime_store_delete": ("void", ["wasmtime_store_t*"]),
    "wasmtime_context_set_epoch_deadline": ("void", ["wasmtime_context_t*", "c_uint64"]),
    "wasmtime_context_set_wasi": ("wasmtime_error_t*", ["wasmtime_context_t*", "wasi_config_t*"]),
    "wasi_config_new": ("wasi_config_t*", []),
    "wasi_config_delete": ("void", ["wasi_config_t*"]),
    "wasi_config_set_argv": ("c_bool", ["wasi_config_t*", "c_size_t", "c_char**"]),
    "wasi_config_preopen_dir": ("c_bool", ["wasi_config_t*", "c_char*", "c_char*", "c_bool"]),
    "wasm_byte_vec_new": ("void", ["wasm_byte_vec_t*", "c_size_t", "wasm_byte_t*"]),
    "wasi_config_set_stdin_bytes": ("void", ["wasi_config_t*", "wasm_byte_vec_t*"]),
    "wasmtime_pooling_allocation_config_new": ("wasmtime_pooling_allocation_config_t*", []),
    "wasmtime_pooling_allocation_config_total_core_instances_set": ("void", ["pool*", "c_uint32"]),
    "wasmtime_pooling_allocation_config_total_memories_set": ("void", ["pool*", "c_uint32"]),
    "wasmtime_pooling_allocation_config_total_tables_set": ("void", ["pool*", "c_uint32"]),
    "wasmtime_pooling_allocation_config_total_stacks_set": ("void", ["pool*", "c_uint32"]),
    "wasmtime_pooling_allocation_config_max_memory_size_set": ("void", ["pool*", "c_size_t"]),
    "wasmtime_pooling_allocation_config_decommit_batch_size_set": ("void", ["pool*", "c_size_t"]),
    "wasmtime_pooling_allocation_config_total_component_instances_set": (
        "void",
        ["pool*", "c_uint32"],
    ),
    "wasmtime_pooling_allocation_config_max_core_instances_per_component_set": (
        "void",
        ["pool*", "c_uint32"],
    ),
    "wasmtime_pooling_allocation_config_max_memories_per_component_set": (
        "void",
        ["pool*", "c_uint32"],
    ),
    "wasmtime_pooling_allocation_config_max_tables_per_component_set": (
        "void",
        ["pool*", "c_uint32"],
    ),
    "wasmtime_config_async_stack_size_set": ("void", ["wasm_config_t*", "c_size_t"]),
    "wasmtime_pooling_allocation_strategy_set": ("void", ["wasm_config_t*", "pool*"]),
    "wasmtime_pooling_allocation_config_delete": ("void", ["pool*"]),
    "wasmtime_error_new": ("wasmtime_error_t*", ["c_char*"]),
    "wasmtime_store_epoch_deadline_callback": (
        "void",
        ["wasmtime_store_t*", "deadline_callback", "c_void_p", "finalizer"],
    ),
    "wasmtime_linker_define_func_unchecked": (
        "wasmtime_error_t*",
        [
            "wasmtime_linker_t*",
            "c_char*",
            "c_size_t",
            "c_char*",
            "c_size_t",
            "wasm_functype_t*",
            "raw_callback",
            "c_void_p",
            "finalizer",
        ],
    ),
    "wasmtime_caller_export_get": (
        "c_bool",
        ["wasmtime_caller_t*", "c_char*", "c_size_t", "wasmtime_extern_t*"],
    ),
    "wasmtime_caller_context": ("wasmtime_context_t*", ["wasmtime_caller_t*"]),
}
"""Every C function the wall calls, with the signature it calls it with."""

C_STRUCTS: dict[str, list[tuple[str, str]] | str] = {
    # name: its fields, or the type it must be
    "wasmtime_extern_t": [("kind", "wasmtime_extern_kind_t"), ("of", "wasmtime_extern_union_t")],
    "wasm_byte_vec_t": [("size", "c_size_t"), ("data", "wasm_byte_t*")],
    "wasmtime_context_t": [],
    "wasmtime_instance_t": [("store_id", "c_uint64"), ("__private", "c_size_t")],
    "wasmtime_val_t": [("kind", "wasmtime_valkind_t"), ("of", "wasmtime_valunion_t")],
    "wasm_trap_t": [],
    "wasm_engine_t": [],
    "wasmtime_update_deadline_kind_t": "c_uint8",
    "wasmtime_func_unchecked_callback_t": "raw_callback",
}
"""Every C type the wall builds or names."""

C_CONSTANTS: dict[str, tuple[str, int]] = {
    "WASMTIME_EXTERN_FUNC": ("c_uint8", 0),
    "WASMTIME_EXTERN_MEMORY": ("c_uint8", 3),
    "WASMTIME_I32": ("c_uint8", 0),
    "WASMTIME_I64": ("c_uint8", 1),
}
"""Every C constant the wall compares with: its type and value."""

ALIASES = {"pool": "wasmtime_pooling_allocation_config_t"}

CALLBACKS = {
    "deadline_callback": (
        "c_size_t",
        ["wasmtime_context_t*", "c_void_p", "c_uint64*", "wasmtime_update_deadline_kind_t*"],
    ),
    "finalizer": ("void", ["c_void_p"]),
    "raw_callback": (
        "c_size_t",
        ["c_void_p", "wasmtime_caller_t*", "wasmtime_val_raw_t*", "c_size_t"],
    ),
}
"""The C function pointer types the wall hands to wasmtime."""


def c_type(spelling: str) -> Any:
    """The ctypes type of a C-like spelling: ``void``, ``c_size_t``, ``wasm_config_t*``."""
    if spelling == "void":
        return None
    base = spelling.rstrip("*")
    kind: Any
    if base in CALLBACKS:
        result, parameters = CALLBACKS[base]
        kind = ctypes.CFUNCTYPE(c_type(result), *map(c_type, parameters))
    elif base.startswith("c_"):
        kind = getattr(ctypes, base)
    else:
        kind = getattr(ffi, ALIASES.get(base, base), None)
        if kind is None:
            pytest.fail(f"wasmtime._ffi has no type {base}. {RECHECK}")
    for _ in range(len(spelling) - len(base)):
        kind = ctypes.POINTER(kind)
    return kind


def ffi_names_used() -> set[str]:
    """The ``ffi.NAME`` attributes ``_capi.py`` reads."""
    tree = ast.parse(CAPI.read_text(encoding="utf-8"))
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "ffi"
    }


WAT_EXPORTS = """
(module
  (memory (export "memory") 1)
  (func (export "run")))
"""

WAT_ECHO = """
(module
  (import "wasi_snapshot_preview1" "fd_read"
    (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")
    ;; iovec at 0: buffer at 64, 256 bytes; bytes read land at 16
    (i32.store (i32.const 0) (i32.const 64))
    (i32.store (i32.const 4) (i32.const 256))
    (drop (call $fd_read (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 16)))
    (i32.store (i32.const 4) (i32.load (i32.const 16)))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 20)))))
"""

WAT_SPIN = '(module (func (export "spin") (loop (br 0))))'


PACKAGE_FOLDERS = ("runtime", "policies", "host_bindings", "sidecar", "wasm_tools")
PRIVATE_ATTRIBUTES = {"_context", "_instance", "ptr"}
"""wasmtime-py attributes that reach C handles (other names may mean other objects)."""


def reaches_into_wasmtime(path: Path) -> list[str]:
    """Where the module at ``path`` imports wasmtime's private modules or reads C handles."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            names = [alias.name for alias in node.names]
            if node.module.startswith("wasmtime._") or (
                node.module == "wasmtime" and any(n.startswith("_") for n in names)
            ):
                found.append(f"line {node.lineno}: from {node.module} import {', '.join(names)}")
        elif isinstance(node, ast.Import):
            found += [
                f"line {node.lineno}: import {alias.name}"
                for alias in node.names
                if alias.name.startswith("wasmtime._")
            ]
        elif isinstance(node, ast.Attribute) and node.attr in PRIVATE_ATTRIBUTES:
            found.append(f"line {node.lineno}: .{node.attr}")
    return found


class TestOneWall:
    def test_no_other_module_reaches_past_wasmtime_pys_public_api(self) -> None:
        modules = [p for folder in PACKAGE_FOLDERS for p in sorted((REPO / folder).rglob("*.py"))]
        reaching = {
            str(path.relative_to(REPO)): where
            for path in modules
            if path != CAPI and (where := reaches_into_wasmtime(path))
        }
        assert reaching == {}, "only runtime/wasm/_capi.py may use wasmtime-py's internals"


class TestPinnedVersion:
    def test_the_installed_wasmtime_is_the_one_the_wall_was_written_for(self) -> None:
        installed = importlib.metadata.version("wasmtime")
        assert installed == _capi.WASMTIME_VERSION, (
            f"wasmtime {installed} is installed, _capi.py was written for "
            f"{_capi.WASMTIME_VERSION}. {RECHECK}"
        )

    def test_the_wall_names_the_version_pyproject_pins(self) -> None:
        project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
        pins = [d for d in project["project"]["dependencies"] if d.startswith("wasmtime")]
        assert pins == [f"wasmtime=={_capi.WASMTIME_VERSION}"], (
            f"pyproject.toml pins {pins}, _capi.py was written for "
            f"wasmtime {_capi.WASMTIME_VERSION}. {RECHECK}"
        )


class TestPrivateSymbols:
    def test_every_ffi_name_the_wall_reads_has_an_expected_shape_here(self) -> None:
        known = C_FUNCTIONS.keys() | C_STRUCTS.keys() | C_CONSTANTS.keys() | {"dll"}
        unchecked = ffi_names_used() - known
        assert not unchecked, (
            f"_capi.py uses {sorted(unchecked)} from wasmtime._ffi: add the shape each is used "
            "with to C_FUNCTIONS or C_STRUCTS in this test."
        )

    def test_the_library_is_one_file_loaded_with_ctypes(self) -> None:
        # epoch_ticker loads the same file again, as a PyDLL
        assert isinstance(ffi.dll, ctypes.CDLL), f"wasmtime._ffi.dll is {ffi.dll!r}. {RECHECK}"
        assert Path(ffi.dll._name).is_file(), f"wasmtime._ffi.dll is {ffi.dll!r}. {RECHECK}"

    @pytest.mark.parametrize("name", sorted(C_FUNCTIONS))
    def test_c_function_signature(self, name: str) -> None:
        result, parameters = C_FUNCTIONS[name]
        expected = (c_type(result), [c_type(p) for p in parameters])
        wrapper = getattr(ffi, name, None)
        function = getattr(_bindings, f"_{name}", None)
        assert callable(wrapper), f"wasmtime._ffi has no {name}. {RECHECK}"
        assert function is not None, f"wasmtime._bindings has no _{name}. {RECHECK}"
        assert (function.restype, function.argtypes) == expected, (
            f"{name} is declared as {function.restype} {function.argtypes}, _capi.py calls it "
            f"as {result} {parameters}. {RECHECK}"
        )
        assert len(inspect.signature(wrapper).parameters) == len(parameters), (
            f"wasmtime._ffi.{name} takes other arguments now. {RECHECK}"
        )

    @pytest.mark.parametrize("name", sorted(C_STRUCTS))
    def test_c_type(self, name: str) -> None:
        expected = C_STRUCTS[name]
        kind = c_type(name)
        if isinstance(expected, str):
            assert kind is c_type(expected), f"wasmtime._ffi.{name} is {kind}. {RECHECK}"
            return
        fields = [(field, c_type(spelling)) for field, spelling in expected]
        assert issubclass(kind, ctypes.Structure), f"wasmtime._ffi.{name} is {kind}. {RECHECK}"
        assert list(getattr(kind, "_fields_", [])) == fields, (
            f"wasmtime._ffi.{name} has the fields {getattr(kind, '_fields_', [])}. {RECHECK}"
        )

    @pytest.mark.parametrize("name", sorted(C_CONSTANTS))
    def test_c_constant(self, name: str) -> None:
        spelling, value = C_CONSTANTS[name]
        constant = getattr(ffi, name, None)
        assert isinstance(constant, c_type(spelling)), f"wasmtime._ffi.{name} changed. {RECHECK}"
        assert constant.value == value, f"wasmtime._ffi.{name} changed. {RECHECK}"

    @pytest.mark.parametrize("error", [wasmtime.WasmtimeError, wasmtime.Trap])
    def test_exceptions_are_made_from_one_c_pointer(self, error: type[Exception]) -> None:
        make = getattr(error, "_from_ptr", None)
        assert make is not None, f"{error.__name__}._from_ptr is gone. {RECHECK}"
        assert list(inspect.signature(make).parameters) == ["ptr"], (
            f"{error.__name__}._from_ptr changed. {RECHECK}"
        )

    @pytest.mark.parametrize("name", ["deadline_callback", "finalizer"])
    def test_the_callbacks_have_the_types_the_c_api_takes(self, name: str) -> None:
        wall = {
            "deadline_callback": _capi._DEADLINE_CALLBACK_TYPE,
            "finalizer": _capi._FINALIZER_TYPE,
            "raw_callback": type(_capi._RAW_CALLBACK),
        }
        assert wall[name] is c_type(name), f"the {name} type of _capi.py changed. {RECHECK}"

    def test_private_attributes_hold_the_c_handles_the_functions_take(self) -> None:
        engine = wasmtime.Engine()
        pre = wasmtime.Linker(engine).instantiate_pre(wasmtime.Module(engine, WAT_EXPORTS))
        # each must be what the C function it is passed to takes
        expected: dict[str, tuple[Callable[[], object], str]] = {
            "Engine.ptr()": (engine.ptr, "wasm_engine_t*"),
            "InstancePre.ptr()": (pre.ptr, "wasmtime_instance_pre_t*"),
            "Config.ptr()": (wasmtime.Config().ptr, "wasm_config_t*"),
            "WasiConfig.ptr()": (wasmtime.WasiConfig().ptr, "wasi_config_t*"),
            "WasiConfig._consume()": (wasmtime.WasiConfig()._consume, "wasi_config_t*"),
        }
        for name, (read, spelling) in expected.items():
            try:
                value = read()
            except AttributeError:
                pytest.fail(f"{name} is gone. {RECHECK}")
            kind = c_type(spelling)
            assert isinstance(value, kind), f"{name} is a {type(value)}, not {kind}. {RECHECK}"

    def test_a_host_functions_exception_is_kept_for_the_caller(self) -> None:
        raise_kept = getattr(_func, "maybe_raise_last_exn", None)
        assert callable(raise_kept), f"wasmtime._func.maybe_raise_last_exn is gone. {RECHECK}"
        assert hasattr(_func, "LAST_EXCEPTION"), f"wasmtime._func.LAST_EXCEPTION is gone. {RECHECK}"

    def test_custom_outputs_are_a_table_of_handles(self) -> None:
        outputs = getattr(_wasi, "CUSTOM_OUTPUTS", None)
        assert isinstance(getattr(outputs, "handles", None), dict), (
            f"wasmtime._wasi.CUSTOM_OUTPUTS.handles is gone: the exit wait cannot see guest "
            f"outputs. {RECHECK}"
        )


@pytest.fixture
def engine() -> Iterator[wasmtime.Engine]:
    config = wasmtime.Config()
    config.epoch_interruption = True
    engine = wasmtime.Engine(config)
    yield engine
    engine.close()


WAT_RESULT = """
(module
  (import "host" "fail" (func $fail))
  (memory (export "memory") 1)
  (data (i32.const 100) "the result")
  (global (export "answer") i32 (i32.const 7))
  (func (export "packed") (result i64) (i64.const 0x640000000a))
  (func (export "small") (result i32) (i32.const 42))
  (func (export "trap") unreachable)
  (func (export "host_error") (call $fail)))
"""


def never() -> bool:
    return False


def _instance(engine: wasmtime.Engine, wat: str) -> tuple[_capi.GuestStore, Any]:
    """A store and a C instance handle of ``wat`` (whose ``host.fail`` import raises)."""
    linker = wasmtime.Linker(engine)
    linker.define_func("host", "fail", wasmtime.FuncType([], []), _fail)
    store = _capi.GuestStore(engine, 1 << 20, never, b"stopped")
    pre = linker.instantiate_pre(wasmtime.Module(engine, wat))
    linker.close()
    return store, store.instantiate(pre)


def _fail() -> None:
    raise wasmtime.Trap("refused by the host")


def _wasi_run(engine: wasmtime.Engine, wat: str, store: _capi.GuestStore) -> Any:
    """Instantiate ``wat`` with WASI in ``store`` and call its ``_start``."""
    linker = wasmtime.Linker(engine)
    linker.define_wasi()
    pre = linker.instantiate_pre(wasmtime.Module(engine, wat))
    linker.close()
    return store.call(store.instantiate(pre), b"_start")


class TestGuestStore:
    def test_calls_an_export_by_name_and_returns_its_integer(self, engine: wasmtime.Engine) -> None:
        store, instance = _instance(engine, WAT_RESULT)
        assert store.call(instance, b"packed", results=1) == (100 << 32) | 10
        assert store.call(instance, b"small", results=1) == 42
        assert store.call(instance, b"absent") is _capi.NOT_A_FUNCTION
        assert store.call(instance, b"memory") is _capi.NOT_A_FUNCTION
        assert store.call(instance, b"answer") is _capi.NOT_A_FUNCTION
        store.close()
        store.close()  # idempotent

    def test_reads_memory_within_bounds_only(self, engine: wasmtime.Engine) -> None:
        store, instance = _instance(engine, WAT_RESULT)
        assert store.read_memory(instance, 100, 10) == b"the result"
        assert store.read_memory(instance, 65530, 6) == bytes(6)
        assert store.read_memory(instance, 65530, 7) is None
        assert store.read_memory(instance, -1, 2) is None
        assert store.memory_size(instance) == 65536
        store.close()

    def test_a_trap_and_a_host_failure_raise_wasmtimes_own_exceptions(
        self, engine: wasmtime.Engine
    ) -> None:
        store, instance = _instance(engine, WAT_RESULT)
        with pytest.raises(wasmtime.Trap, match="unreachable"):
            store.call(instance, b"trap")
        with pytest.raises((wasmtime.Trap, wasmtime.WasmtimeError), match="refused by the host"):
            store.call(instance, b"host_error")
        with pytest.raises(wasmtime.WasmtimeError, match="expected 1 results"):
            store.call(instance, b"small")
        store.close()

    def test_an_exit_is_an_exit_trap_with_its_status(self, engine: wasmtime.Engine) -> None:
        store = _capi.GuestStore(engine, 1 << 20, never, b"stopped")
        store.set_wasi(["exit"])
        with pytest.raises(wasmtime.ExitTrap) as exited:
            _wasi_run(engine, WAT_EXIT, store)
        assert exited.value.code == 3
        store.close()

    def test_the_guest_sees_its_argv_and_preopens(
        self, engine: wasmtime.Engine, tmp_path: Path
    ) -> None:
        (tmp_path / "seen").mkdir()
        store = _capi.GuestStore(engine, 1 << 20, never, b"stopped")
        written: list[bytes] = []
        config = wasmtime.WasiConfig()
        config.stdout_custom = written.append
        store.set_wasi(
            ["tool", '{"a": "\u00e9"}'], [(str(tmp_path / "seen"), "/ws", False)], config
        )
        _wasi_run(engine, WAT_ARGS_AND_PREOPEN, store)
        store.close()
        # argv[1] as written, then the name of preopen fd 3
        assert b"".join(written) == '{"a": "\u00e9"}'.encode() + b"/ws"

    def test_the_memory_limit_holds(self, engine: wasmtime.Engine) -> None:
        store = _capi.GuestStore(engine, 65536, never, b"stopped")
        linker = wasmtime.Linker(engine)
        with pytest.raises(wasmtime.WasmtimeError):
            store.instantiate(linker.instantiate_pre(wasmtime.Module(engine, WAT_TWO_PAGES)))
        store.close()

    def test_a_failed_instantiation_raises(self) -> None:
        config = wasmtime.Config()
        _capi.use_pooling_allocator(config, instances=1, max_memory_bytes=1 << 20)
        engine = wasmtime.Engine(config)
        pre = wasmtime.Linker(engine).instantiate_pre(wasmtime.Module(engine, WAT_EXPORTS))
        first = _capi.GuestStore(engine, 1 << 20, never, b"stopped")
        second = _capi.GuestStore(engine, 1 << 20, never, b"stopped")
        first.instantiate(pre)
        with pytest.raises(wasmtime.WasmtimeError):
            second.instantiate(pre)  # the one slot is taken
        first.close()
        second.instantiate(pre)  # the slot came back
        second.close()
        engine.close()


WAT_EXIT = """
(module
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (func (export "_start") (call $exit (i32.const 3))))
"""

WAT_TWO_PAGES = '(module (memory (export "memory") 2))'

WAT_ARGS_AND_PREOPEN = """
(module
  (import "wasi_snapshot_preview1" "args_get"
    (func $args_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_prestat_dir_name"
    (func $dir_name (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func $strlen (param $p i32) (result i32) (local $n i32)
    (block $done (loop $next
      (br_if $done (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (br $next)))
    (local.get $n))
  (func (export "_start")
    ;; argv pointers at 0, strings at 64; iovec at 16; the preopen's name at 2048
    (drop (call $args_get (i32.const 0) (i32.const 64)))
    (i32.store (i32.const 16) (i32.load (i32.const 4)))
    (i32.store (i32.const 20) (call $strlen (i32.load (i32.const 4))))
    (drop (call $fd_write (i32.const 1) (i32.const 16) (i32.const 1) (i32.const 24)))
    (drop (call $dir_name (i32.const 3) (i32.const 2048) (i32.const 3)))
    (i32.store (i32.const 16) (i32.const 2048))
    (i32.store (i32.const 20) (i32.const 3))
    (drop (call $fd_write (i32.const 1) (i32.const 16) (i32.const 1) (i32.const 24)))))
"""


class TestSetStdinBytes:
    @pytest.mark.parametrize("data", [b'{"path": "/workspace/a"}', b"\x00\xff\n raw", b""])
    def test_the_guest_reads_exactly_the_bytes(self, engine: wasmtime.Engine, data: bytes) -> None:
        written: list[bytes] = []
        wasi = wasmtime.WasiConfig()
        _capi.set_stdin_bytes(wasi, data)
        wasi.stdout_custom = written.append
        store = _capi.GuestStore(engine, 1 << 20, never, b"stopped")
        store.set_wasi(["echo"], config=wasi)
        _wasi_run(engine, WAT_ECHO, store)
        store.close()
        assert b"".join(written) == data


class TestUsePoolingAllocator:
    def pooled(self, instances: int, max_memory_bytes: int) -> wasmtime.Engine:
        config = wasmtime.Config()
        _capi.use_pooling_allocator(config, instances=instances, max_memory_bytes=max_memory_bytes)
        return wasmtime.Engine(config)

    def test_instances_come_from_the_given_number_of_slots(self) -> None:
        engine = self.pooled(instances=1, max_memory_bytes=1 << 20)
        module = wasmtime.Module(engine, WAT_EXPORTS)
        first = wasmtime.Store(engine)
        wasmtime.Instance(first, module, [])
        second = wasmtime.Store(engine)
        with pytest.raises(wasmtime.WasmtimeError):
            wasmtime.Instance(second, module, [])
        first.close()
        wasmtime.Instance(second, module, [])  # the slot came back
        second.close()
        engine.close()

    def test_no_memory_grows_past_the_slot(self) -> None:
        engine = self.pooled(instances=2, max_memory_bytes=65536)
        store = wasmtime.Store(engine)
        fits = wasmtime.Instance(store, wasmtime.Module(engine, WAT_EXPORTS), [])
        memory = fits.exports(store)["memory"]
        assert isinstance(memory, wasmtime.Memory)
        assert not _grows(memory, store)
        with pytest.raises(wasmtime.WasmtimeError, match="pooling allocator"):
            wasmtime.Module(engine, '(module (memory (export "memory") 2))')
        store.close()
        engine.close()


def _grows(memory: wasmtime.Memory, store: wasmtime.Store) -> bool:
    try:
        memory.grow(store, 1)
    except wasmtime.WasmtimeError:
        return False
    return True


class TestStopCheck:
    def test_the_guest_runs_on_until_the_check_says_stop(self, engine: wasmtime.Engine) -> None:
        asked: list[int] = []

        def should_stop() -> bool:
            asked.append(1)
            return len(asked) == 3

        store = _capi.GuestStore(engine, 1 << 20, should_stop, b"stopped by its check")
        instance = store.instantiate(
            wasmtime.Linker(engine).instantiate_pre(wasmtime.Module(engine, WAT_SPIN))
        )
        done = threading.Event()
        ticker = threading.Thread(target=_tick, args=(engine, done), daemon=True)
        ticker.start()
        try:
            with pytest.raises((wasmtime.WasmtimeError, wasmtime.Trap), match="stopped by its"):
                store.call(instance, b"spin")
        finally:
            done.set()
            ticker.join()
        assert len(asked) == 3
        store.close()

    def test_the_check_is_released_with_its_store(self, engine: wasmtime.Engine) -> None:
        def should_stop() -> bool:
            return True

        store = _capi.GuestStore(engine, 1 << 20, should_stop, b"stop")
        assert any(check is should_stop for check, _ in _capi._checks.values())
        store.close()
        assert not any(check is should_stop for check, _ in _capi._checks.values())


def _tick(engine: wasmtime.Engine, done: threading.Event) -> None:
    tick = _capi.epoch_ticker(engine)  # the engine's own ticks, which keep the GIL
    while not done.wait(0.001):
        tick()


class TestLiveOutputCallbacks:
    def test_counts_a_guest_output_while_wasmtime_holds_it(self) -> None:
        wasi = wasmtime.WasiConfig()
        wasi.stdout_custom = lambda data: None
        assert _capi.live_output_callbacks() >= 1
        wasi.close()
