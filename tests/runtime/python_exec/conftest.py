"""The built python_exec component, run by the test-only host of ``_harness``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from toolcage.wasm_tools import _python_build

from ._harness import Guest


@pytest.fixture(scope="session")
def guest() -> Iterator[Guest]:
    """The tree's component, built first when its inputs changed (a no-op otherwise)."""
    _python_build.build_default()
    python = Guest(_python_build.COMPONENT)
    yield python
    python.close()
