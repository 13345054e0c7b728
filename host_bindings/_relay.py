"""The ``relay`` form of a binding: one of its calls, under the one import the relay guest
uses.

Most state tools do nothing but hand their arguments to one host call and show its answer.
One guest module serves them all (``wasm_tools/relay/relay.c``): it imports
``toolcage_relay_v1.call`` and ``.result``, and the tool's declaration names which call of
which binding that is (``"relay": "memory.save"``). :class:`RelayBinding` defines the two
imports from the one call of the binding the tool was *granted*::

    toolcage_relay_v1   call(req_ptr i32, req_len i32)   -> i32  result length
                        result(buf_ptr i32, buf_len i32) -> i32  bytes copied

It carries the binding's name, so grants, worker filtering and the runner's keys see the
same capability. When the granted form lacks the call -- a worker session's ``memory``
answers ``search`` alone (:func:`~._grants.for_worker` maps a relay to the relay of the
read-only form) -- nothing is defined, and the guest fails to link, as a guest importing
``toolcage_memory_v1.save`` would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import wasmtime

from ._abi import module_name
from ._base import HostBinding
from ._results import JsonHandler, define_json_calls

MODULE = module_name("relay")
"""The import module of the relay guest."""


@runtime_checkable
class Relayable(HostBinding, Protocol):
    """A binding whose JSON calls a relay tool may name."""

    def calls(self) -> Mapping[str, JsonHandler]:
        """The calls this form of the binding answers, by import name."""
        ...


class RelayBinding:
    """``inner``'s call ``call`` as ``toolcage_relay_v1.call``."""

    def __init__(self, inner: Relayable, call: str) -> None:
        self.inner = inner
        self.call = call

    @property
    def name(self) -> str:
        return self.inner.name

    def define(self, linker: wasmtime.Linker) -> None:
        handler = self.inner.calls().get(self.call)
        if handler is not None:
            define_json_calls(linker, MODULE, {"call": handler})

    def __repr__(self) -> str:
        return f"RelayBinding({self.inner.name}.{self.call})"


def unwrapped(binding: HostBinding) -> HostBinding:
    """The binding itself, or the one a relay relays to."""
    return binding.inner if isinstance(binding, RelayBinding) else binding


def relaying(binding: HostBinding, call: str) -> RelayBinding:
    """``binding``'s ``call`` as a relay; :class:`ValueError` when it has no such call."""
    if not isinstance(binding, Relayable) or call not in binding.calls():
        raise ValueError(f"the {binding.name} binding has no call {call!r} to relay")
    return RelayBinding(binding, call)
