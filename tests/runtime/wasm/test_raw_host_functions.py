"""Host functions defined by ``_capi.define_raw_func``: raw arguments, the caller's memory."""

from __future__ import annotations

import ctypes

import pytest
import wasmtime
from toolcage.runtime.wasm import _capi
from wasmtime import _ffi as ffi

WAT = """
(module
  (import "host" "f" (func $f (param i32 i64 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "run") (result i32)
    (call $f (i32.const -5) (i64.const 0x123456789) (i32.const 100))))
"""

NO_MEMORY = """
(module
  (import "host" "f" (func $f (param i32) (result i32)))
  (func (export "run") (result i32) (call $f (i32.const 7))))
"""


def run(wat: str, params: list[str], func: _capi.RawHostFunction) -> tuple[int, bytes]:
    """``run()`` of the module ``wat`` with ``host.f`` = ``func``; its result and memory head."""
    engine = wasmtime.Engine()
    linker = wasmtime.Linker(engine)
    _capi.define_raw_func(linker, "host", "f", params, func)
    store = wasmtime.Store(engine)
    instance = linker.instantiate(store, wasmtime.Module(engine, wat))
    exports = instance.exports(store)
    start = exports["run"]
    assert isinstance(start, wasmtime.Func)
    result = start(store)
    assert isinstance(result, int)
    memory = exports.get("memory")
    head = bytes(memory.read(store, 0, 8)) if isinstance(memory, wasmtime.Memory) else b""
    return result, head


class TestDefineRawFunc:
    def test_arguments_memory_and_result(self) -> None:
        seen: list[object] = []

        def f(view: memoryview | None, a: int, b: int, c: int) -> int:
            assert view is not None
            seen.extend([len(view), a, b, c])
            view[0:5] = b"hello"
            return a * 2

        result, head = run(WAT, ["i32", "i64", "i32"], f)
        assert result == -10
        assert seen == [65536, -5, 0x123456789, 100]
        assert head.startswith(b"hello")

    def test_a_raising_function_gives_the_failure_code_not_a_trap(self) -> None:
        def f(view: memoryview | None, *args: int) -> int:
            raise RuntimeError("boom")

        assert run(WAT, ["i32", "i64", "i32"], f)[0] == _capi.RAW_FAILURE

    def test_a_caller_without_memory_gets_none(self) -> None:
        views: list[object] = []

        def f(view: memoryview | None, a: int) -> int:
            views.append(view)
            return a + 1

        assert run(NO_MEMORY, ["i32"], f)[0] == 8
        assert views == [None]

    def test_a_wrong_type_is_a_link_error(self) -> None:
        with pytest.raises(wasmtime.WasmtimeError):
            run(WAT, ["i32"], lambda view, a: 0)

    def test_the_value_slot_is_the_c_apis(self) -> None:
        assert ctypes.sizeof(ffi.wasmtime_val_raw_t) == _capi._RAW_SLOT
