"""The engine of WebAssembly components (``python_exec``): deep stacks, few instances.

A component such as CPython compiled with componentize-py runs C code whose recursion
(the parser, ``repr``, ``json``) lives on the *wasm* stack. With wasmtime's default of
512 KiB, some 150 nested brackets trap the guest ("call stack exhausted") instead of raising
``RecursionError``; :data:`MAX_WASM_STACK` (64 MiB) lets CPython's own limits answer first.
Three sizes must agree, and two wrong pairings are fatal to the *host*:

- wasmtime refuses a ``max_wasm_stack`` larger than its ``async_stack_size`` by
  **aborting the process** when the engine is created, so :data:`ASYNC_STACK` is set
  above it;
- without async support wasm runs on the calling thread's native stack, so a guest thread
  needs more native stack than the wasm stack may take: on an 8 MiB thread a deep guest
  **segfaulted the host**. Guests of this engine run only on its own threads, made with
  :data:`THREAD_STACK` (96 MiB, measured enough), never on the event loop's thread.

:func:`check_stacks` holds these rules and runs before wasmtime sees the sizes.

Pool: :data:`INSTANCES` component instances at once (each a slot of the pooling allocator,
its memories reserved up front as address space; a call beyond that waits in its thread
for a slot) and :data:`SPARES` more for instances prepared ahead, each of at most
:data:`PER_COMPONENT` core instances, memories and tables
(componentize-py's CPython needs 9-16 core instances, one memory, two tables; the rest is
margin for an operator's build).
"""

from __future__ import annotations

import wasmtime

from ._capi import set_async_stack_size, use_pooling_allocator
from ._engine import EngineProfile

MAX_WASM_STACK = 64 << 20
"""Bytes of wasm stack a component guest may use."""
ASYNC_STACK = MAX_WASM_STACK + (1 << 20)
"""wasmtime's async stack size: must exceed :data:`MAX_WASM_STACK` (see the docstring)."""
THREAD_STACK = 96 << 20
"""Native stack of each thread component guests run on."""
INSTANCES = 16
"""Component instances alive at once: concurrent ``python_exec`` calls beyond this wait."""
SPARES = 2
"""Instances prepared ahead of calls (:mod:`._spares`) at once, in pool slots of their own."""
PER_COMPONENT = (24, 2, 4)
"""Core instances, memories and tables one component instance may hold."""


class StackConfigError(ValueError):
    """Stack sizes that would abort or crash the host process."""


def check_stacks(max_wasm_stack: int, async_stack: int, thread_stack: int) -> None:
    """Refuse sizes that would abort (``async_stack`` not above ``max_wasm_stack``) or
    crash (a thread stack without half again the wasm stack as headroom) the host."""
    if async_stack <= max_wasm_stack:
        raise StackConfigError(
            f"async_stack_size ({async_stack} bytes) must exceed max_wasm_stack "
            f"({max_wasm_stack} bytes): wasmtime aborts the process otherwise"
        )
    if thread_stack < max_wasm_stack * 3 // 2:
        raise StackConfigError(
            f"guest threads' stack ({thread_stack} bytes) must be at least 1.5 times "
            f"max_wasm_stack ({max_wasm_stack} bytes): a deep guest overflows it otherwise"
        )


def component_config(
    max_memory_bytes: int,
    *,
    max_wasm_stack: int = MAX_WASM_STACK,
    async_stack: int = ASYNC_STACK,
    thread_stack: int = THREAD_STACK,
) -> wasmtime.Config:
    """The config of a component engine (checked by :func:`check_stacks` first)."""
    check_stacks(max_wasm_stack, async_stack, thread_stack)
    config = wasmtime.Config()
    config.epoch_interruption = True
    # A fresh instance per call: the 40 MB image is mapped copy-on-write, not copied.
    config.memory_init_cow = True
    set_async_stack_size(config, async_stack)
    config.max_wasm_stack = max_wasm_stack
    use_pooling_allocator(
        config,
        instances=INSTANCES + SPARES,
        max_memory_bytes=max_memory_bytes,
        per_component=PER_COMPONENT,
    )
    return config


COMPONENTS = EngineProfile(
    "component",
    INSTANCES,
    component_config,
    settings=f"stack:{MAX_WASM_STACK}",
    thread_stack=THREAD_STACK,
)
"""The profile of the component engine."""
