"""Fixtures shared by every test folder, and the guest build that precedes them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from toolcage.runtime.wasm import WasmEngine
from toolcage.runtime.wasm._component_engine import COMPONENTS
from toolcage.runtime.wasm._components import ComponentCache, bundled_component
from toolcage.runtime.wasm._python_exec import MEMORY_BYTES
from toolcage.wasm_tools.build import SDK, BuildError, build_all, build_cached, sdk_sources

TESTS = Path(__file__).parent
TEST_GUESTS = sorted(TESTS.glob("**/guests/*.c"))
"""The suites' own guests (``tests/**/guests/*.c``), one module each."""
SDK_GUESTS = sorted(TESTS.glob("**/sdk_guests/*.c"))
"""Guests linked with the guest SDK (``tests/**/sdk_guests/*.c``): their fixtures find them
with ``build_cached([source, *sdk_sources()], include=[SDK])``."""


def pytest_sessionstart(session: pytest.Session) -> None:
    """Build the tool modules and the test guests before any test runs.

    A first build compiles wasi-libc, minutes on a busy machine; here no test's timeout is
    running. The fixtures that need the modules ask again and find them built, or meet the
    compiler's error.
    """
    try:
        build_all()
        build_cached(*([source] for source in TEST_GUESTS))
        build_cached(*([source, *sdk_sources()] for source in SDK_GUESTS), include=[SDK])
    except BuildError as exc:
        print(
            f"\nbuilding the guests failed; tests that need them will fail:\n{exc}", file=sys.stderr
        )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def python_exec_compiled() -> None:
    """The bundled ``python_exec`` component compiled into the shared on-disk cache.

    Its first compile takes seconds (once per machine); every runtime of the session then
    loads the cached code in milliseconds, so no test's own deadline pays for it. The key
    is the runtime's: the component engine at the default memory size.
    """
    with WasmEngine(max_memory_bytes=MEMORY_BYTES, profile=COMPONENTS) as engine:
        ComponentCache(engine.engine, settings=engine.settings).get(bundled_component()).close()
