"""The host ABI through real wasmtime guests written in WAT.

Each guest only forwards its exports to the imports, so the tests can drive every
argument the way a buggy or hostile guest would.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import wasmtime
from toolcage.host_bindings import (
    AbiError,
    CallState,
    ClockBinding,
    HostBindings,
    LogBinding,
    ProgressBinding,
    UnknownCapability,
    current_call,
)
from toolcage.policies import EgressConfig, ToolcageConfig

from .servers import serving

FORWARDER = """
(module
  (import "{module}" "{call}" (func $call (param i32 i32) (result i32)))
  (import "{module}" "result" (func $result (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "call") (param i32 i32) (result i32) local.get 0 local.get 1 call $call)
  (func (export "result") (param i32 i32) (result i32) local.get 0 local.get 1 call $result))
"""

REPORTER = """
(module
  (import "toolcage_progress_v1" "report" (func $report (param i32 i32 f64) (result i32)))
  (import "toolcage_log_v1" "write" (func $write (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "report") (param i32 i32 f64) (result i32)
    local.get 0 local.get 1 local.get 2 call $report)
  (func (export "write") (param i32 i32 i32) (result i32)
    local.get 0 local.get 1 local.get 2 call $write))
"""

NO_MEMORY = """
(module
  (import "toolcage_clock_v1" "now" (func $now (param i32 i32) (result i32)))
  (func (export "call") (param i32 i32) (result i32) local.get 0 local.get 1 call $now))
"""


class Guest:
    def __init__(self, wat: str, linker_setup: Any) -> None:
        self.engine = wasmtime.Engine()
        self.store = wasmtime.Store(self.engine)
        linker = wasmtime.Linker(self.engine)
        linker_setup(linker)
        self.instance = linker.instantiate(self.store, wasmtime.Module(self.engine, wat))
        exports = self.instance.exports(self.store)
        memory = exports.get("memory")
        self.memory = memory if isinstance(memory, wasmtime.Memory) else None
        self.exports = exports

    def call(self, name: str, *args: Any) -> Any:
        func = self.exports[name]
        assert isinstance(func, wasmtime.Func)
        return func(self.store, *args)

    def put(self, offset: int, data: bytes) -> None:
        assert self.memory is not None
        self.memory.write(self.store, data, offset)

    def get(self, offset: int, length: int) -> bytes:
        assert self.memory is not None
        return bytes(self.memory.read(self.store, offset, offset + length))


class Recorded:
    def __init__(self) -> None:
        self.progress: list[tuple[str, float | None]] = []
        self.logs: list[tuple[str, str]] = []

    def state(self, tool: str = "tool", timeout: float = 10) -> CallState:
        return CallState(
            tool_name=tool,
            deadline=time.monotonic() + timeout,
            progress=lambda m, f: self.progress.append((m, f)),
            log=lambda level, m: self.logs.append((level, m)),
        )


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    rec = Recorded()
    token = current_call.set(rec.state())
    yield rec
    current_call.reset(token)


def _clock_guest() -> Guest:
    wat = FORWARDER.format(module="toolcage_clock_v1", call="now")
    return Guest(wat, ClockBinding().define)


def _round_trip(guest: Guest, request: bytes) -> Any:
    guest.put(0, request)
    length = guest.call("call", 0, len(request))
    assert length > 0
    assert guest.call("result", 4096, length) == length
    return json.loads(guest.get(4096, length))


class TestRoundTrip:
    def test_clock_request_and_result(self, recorded: Recorded) -> None:
        result = _round_trip(_clock_guest(), b'{"timezone": "Asia/Tokyo"}')
        assert result["ok"] is True
        assert result["timezone"] == "Asia/Tokyo"
        assert result["utc_offset"] == "+09:00"

    def test_result_is_taken_once(self, recorded: Recorded) -> None:
        guest = _clock_guest()
        _round_trip(guest, b"{}")
        assert guest.call("result", 4096, 1000) == AbiError.NO_RESULT

    def test_short_buffer_keeps_the_result_pending(self, recorded: Recorded) -> None:
        guest = _clock_guest()
        guest.put(0, b"{}")
        length = guest.call("call", 0, 2)
        assert guest.call("result", 4096, length - 1) == AbiError.SHORT_BUF
        assert guest.call("result", 4096, length) == length

    def test_another_call_cannot_read_a_pending_result(self, recorded: Recorded) -> None:
        guest = _clock_guest()
        guest.put(0, b"{}")
        length = guest.call("call", 0, 2)
        token = current_call.set(recorded.state("other_tool"))
        try:
            assert guest.call("result", 4096, length) == AbiError.NO_RESULT
        finally:
            current_call.reset(token)


class TestBadPointers:
    @pytest.mark.parametrize(
        ("ptr", "length"),
        [
            (65536, 1),  # one past the end of a one-page memory
            (65530, 10),  # straddles the end
            (-1, 1),  # 0xFFFFFFFF as u32
            (-(2**31), 16),
            (0, -1),  # negative length
            (2**31 - 1, 2**31 - 1),
        ],
    )
    def test_out_of_range_request_is_a_fault(
        self, recorded: Recorded, ptr: int, length: int
    ) -> None:
        guest = _clock_guest()
        assert guest.call("call", ptr, length) in (AbiError.FAULT, AbiError.TOO_BIG)
        # the host and the guest are fine afterwards
        assert _round_trip(guest, b"{}")["ok"] is True

    @pytest.mark.parametrize(("ptr", "capacity"), [(65536, 100), (65500, 100), (-8, 100)])
    def test_out_of_range_result_buffer_is_a_fault(
        self, recorded: Recorded, ptr: int, capacity: int
    ) -> None:
        guest = _clock_guest()
        guest.put(0, b"{}")
        length = guest.call("call", 0, 2)
        assert guest.call("result", ptr, capacity) == AbiError.FAULT
        assert guest.call("result", 0, length) == length  # still pending, still deliverable

    def test_oversized_request_is_refused_without_reading(self, recorded: Recorded) -> None:
        assert _clock_guest().call("call", 0, 64 * 1024 * 1024) == AbiError.TOO_BIG

    @pytest.mark.parametrize(
        "request_bytes", [b"not json", b"[1, 2]", b"\xff\xfe", b'{"timezone": 5}']
    )
    def test_malformed_request_is_invalid(self, recorded: Recorded, request_bytes: bytes) -> None:
        guest = _clock_guest()
        guest.put(0, request_bytes)
        assert guest.call("call", 0, len(request_bytes)) == AbiError.INVALID

    def test_guest_without_memory_gets_fault(self, recorded: Recorded) -> None:
        guest = Guest(NO_MEMORY, ClockBinding().define)
        assert guest.call("call", 0, 2) == AbiError.FAULT

    def test_outside_a_call_is_no_call(self) -> None:
        assert _clock_guest().call("call", 0, 0) == AbiError.NO_CALL


class TestProgressAndLog:
    def _guest(self) -> Guest:
        def setup(linker: wasmtime.Linker) -> None:
            ProgressBinding().define(linker)
            LogBinding().define(linker)

        return Guest(REPORTER, setup)

    def test_progress_reaches_the_call(self, recorded: Recorded) -> None:
        guest = self._guest()
        guest.put(0, b"half way")
        assert guest.call("report", 0, 8, 0.5) == 0
        assert guest.call("report", 0, 4, -1.0) == 0
        assert recorded.progress == [("half way", 0.5), ("half", None)]

    def test_log_levels(self, recorded: Recorded) -> None:
        guest = self._guest()
        guest.put(0, b"careful\xff")
        assert guest.call("write", 2, 0, 8) == 0
        assert guest.call("write", 99, 0, 7) == 0
        assert recorded.logs == [("warning", "careful\ufffd"), ("info", "careful")]

    def test_bad_pointer_in_progress_is_a_fault(self, recorded: Recorded) -> None:
        guest = self._guest()
        assert guest.call("report", 70000, 10, 0.1) == AbiError.FAULT
        assert guest.call("write", 1, 0, 5000) == AbiError.TOO_BIG
        assert recorded.progress == []
        assert recorded.logs == []


HTTP_GUEST = FORWARDER.format(module="toolcage_http_v1", call="request")


class TestGrants:
    def _bindings(self, **egress: Any) -> HostBindings:
        return HostBindings.from_config(ToolcageConfig(egress=EgressConfig(**egress)))

    def test_declared_needs_are_granted(self) -> None:
        granted = self._bindings().granted("web_fetch", ["http", "progress"])
        assert [b.name for b in granted] == ["http", "progress"]

    def test_operator_can_revoke(self) -> None:
        granted = self._bindings(grants={"web_fetch": ("progress",)}).granted(
            "web_fetch", ["http", "progress"]
        )
        assert [b.name for b in granted] == ["progress"]

    def test_grants_never_add_undeclared_capabilities(self) -> None:
        granted = self._bindings(grants={"t": ("http", "clock")}).granted("t", ["clock"])
        assert [b.name for b in granted] == ["clock"]

    def test_unknown_capability_is_an_error(self) -> None:
        with pytest.raises(UnknownCapability, match="filesystem"):
            self._bindings().granted("t", ["filesystem"])

    def test_ungranted_import_cannot_be_instantiated(self) -> None:
        bindings = self._bindings(grants={"http_request": ()})
        with pytest.raises(wasmtime.WasmtimeError, match="toolcage_http_v1"):
            Guest(
                HTTP_GUEST, lambda linker: bindings.define_granted(linker, "http_request", ["http"])
            )

    def test_granted_http_round_trip_through_a_guest(self) -> None:
        bindings = self._bindings(private_exceptions=("127.0.0.1",))
        with serving() as server:
            guest = Guest(
                HTTP_GUEST, lambda linker: bindings.define_granted(linker, "http_request", ["http"])
            )
            token = current_call.set(Recorded().state("http_request"))
            try:
                result = _round_trip(guest, json.dumps({"url": server.url + "/ok"}).encode())
            finally:
                current_call.reset(token)
        assert result["status"] == 200
        assert result["body"] == "hello"
