"""The façade: ``__all__`` is sorted and every name in it exists."""

from __future__ import annotations

import toolcage.host_bindings as host_bindings


class TestExports:
    def test_all_is_sorted(self) -> None:
        assert host_bindings.__all__ == sorted(host_bindings.__all__)

    def test_all_names_exist(self) -> None:
        for name in host_bindings.__all__:
            assert hasattr(host_bindings, name), name

    def test_abi_module_names_are_versioned(self) -> None:
        assert host_bindings.module_name("http") == "toolcage_http_v1"
        assert host_bindings.ABI_VERSION == 1
