"""``toolcage_channel_v1.send`` driven the way a buggy or hostile guest would: a WAT guest
that forwards every argument to the import."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from toolcage.host_bindings import AbiError, CallState, MediaBinding, current_call
from toolcage.policies import Principal

from .test_abi import Guest

SENDER = """
(module
  (import "toolcage_channel_v1" "send" (func $send (param i32 i32 i32 i32) (result i32)))
  (import "toolcage_channel_v1" "result" (func $result (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "send") (param i32 i32 i32 i32) (result i32)
    local.get 0 local.get 1 local.get 2 local.get 3 call $send)
  (func (export "result") (param i32 i32) (result i32) local.get 0 local.get 1 call $result))
"""
META = b'{"name": "a.png", "mime_type": "image/png"}'
PAGE = 65536


@pytest.fixture
def state() -> Iterator[CallState]:
    made = CallState(
        tool_name="send_media",
        deadline=time.monotonic() + 10,
        progress=lambda m, f: None,
        log=lambda level, m: None,
        principal=Principal(channel_id="chat-1"),
    )
    token = current_call.set(made)
    yield made
    current_call.reset(token)


def sender(binding: MediaBinding) -> Guest:
    guest = Guest(SENDER, binding.define)
    guest.put(0, META)
    return guest


def answer(guest: Guest, length: int) -> dict[str, object]:
    assert length > 0
    assert guest.call("result", 32768, length) == length
    return json.loads(guest.get(32768, length))  # type: ignore[no-any-return]


class TestSend:
    def test_the_bytes_go_to_the_calls_outbox(self, state: CallState) -> None:
        binding = MediaBinding(1000)
        guest = sender(binding)
        guest.put(1024, b"\x89PNG")
        said = answer(guest, guest.call("send", 0, len(META), 1024, 4))
        assert said["ok"] is True
        assert json.loads(str(said["text"]))["channel_id"] == "chat-1"
        [item] = binding.take(state)
        assert not isinstance(item, str)
        assert (item.name, item.media_type, item.data) == ("a.png", "image/png", b"\x89PNG")
        assert binding.take(state) == []

    def test_data_outside_memory_is_a_fault_and_queues_nothing(self, state: CallState) -> None:
        binding = MediaBinding(1 << 20)
        guest = sender(binding)
        assert guest.call("send", 0, len(META), PAGE - 2, 4) == AbiError.FAULT
        assert guest.call("send", 0, len(META), -1, 4) == AbiError.FAULT
        assert binding.take(state) == []

    def test_a_negative_length_is_invalid(self, state: CallState) -> None:
        binding = MediaBinding(1000)
        assert sender(binding).call("send", 0, len(META), 1024, -1) == AbiError.INVALID

    @pytest.mark.parametrize(
        "meta", [b"[]", b'{"name": 1, "mime_type": "x"}', b"{", b'{"name": "a"}']
    )
    def test_bad_meta_is_invalid(self, state: CallState, meta: bytes) -> None:
        binding = MediaBinding(1000)
        guest = Guest(SENDER, binding.define)
        guest.put(0, meta)
        assert guest.call("send", 0, len(meta), 1024, 4) == AbiError.INVALID
        assert binding.take(state) == []

    def test_one_call_hands_over_at_most_the_cap_in_all(self, state: CallState) -> None:
        binding = MediaBinding(10)
        guest = sender(binding)
        assert answer(guest, guest.call("send", 0, len(META), 1024, 6))["ok"] is True
        refused = answer(guest, guest.call("send", 0, len(META), 1024, 6))
        assert refused["ok"] is False
        assert refused["error_type"] == "validation_error"
        assert len(binding.take(state)) == 1

    def test_outside_a_call_is_no_call(self) -> None:
        binding = MediaBinding(1000)
        assert sender(binding).call("send", 0, len(META), 1024, 4) == AbiError.NO_CALL
