"""Linking a component with WASI 0.2 and its granted ``toolcage:tool`` interfaces.

A component tool's linker holds ``wasi:*@0.2`` (``Linker.add_wasip2``: the WASI context of
each call decides what it reaches -- its preopens, no network, no environment) and one
interface per granted host binding (:mod:`toolcage.host_bindings._component_imports`),
nothing else. A linker is made once per set of bindings and shared by the calls.

What a component imports is checked when it is loaded, not when it is called: its
imports are read from its type (:func:`imports_of`) and anything beyond WASI 0.2 (as
linked: :data:`WASI_IMPORT`) and the interfaces its declaration grants is refused by name
(:func:`check_imports`), so a tool built against more than it declared never enters the
runtime.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import wasmtime
from toolcage.host_bindings import HostBinding
from toolcage.host_bindings._component_imports import (
    COMPONENT_CAPABILITIES,
    define_interface,
    interface,
)
from wasmtime.component import Component, Linker

from ._link import LinkError

WASI_IMPORT = re.compile(
    r"wasi:(?:io|clocks|random|cli|filesystem|sockets)/[a-z][a-z0-9-]*@0\.2\.\d+"
)
"""An import every component may have: an interface of WASI 0.2 that ``add_wasip2``
provides (what it reaches is the call's WASI context: its preopens, no network, no
environment). ``wasi:http`` is not linked, so not allowed either."""


def imports_of(component: Component, engine: wasmtime.Engine) -> list[str]:
    """The names of what ``component`` imports."""
    with component.type as kind:
        return list(kind.imports(engine))


def capability_of(name: str) -> str | None:
    """The capability whose interface is the import ``name``; None for any other name."""
    return next((c for c in COMPONENT_CAPABILITIES if interface(c) == name), None)


def check_imports(tool: str, imports: Iterable[str], granted: Iterable[str]) -> frozenset[str]:
    """The capabilities ``tool``'s component imports; :class:`LinkError` naming the first
    import that is neither WASI 0.2 nor the interface of a capability in ``granted``."""
    allowed = set(granted)
    used = set()
    for name in imports:
        if WASI_IMPORT.fullmatch(name):
            continue
        capability = capability_of(name)
        if capability is None or capability not in allowed:
            offered = ", ".join(interface(c) for c in sorted(allowed & COMPONENT_CAPABILITIES))
            raise LinkError(
                f"component tool {tool} imports {name!r}, which its declaration does not "
                f"grant (it may import WASI 0.2 but wasi:http, and {offered or 'nothing else'})"
            )
        used.add(capability)
    return frozenset(used)


def component_linker(engine: wasmtime.Engine, bindings: Sequence[HostBinding]) -> Linker:
    """A linker with WASI 0.2 and the interfaces of ``bindings``."""
    linker = Linker(engine)
    try:
        linker.add_wasip2()
        with linker.root() as root:
            for binding in bindings:
                define_interface(root, binding)
    except BaseException:
        linker.close()
        raise
    return linker
