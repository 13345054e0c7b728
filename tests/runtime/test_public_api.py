"""The public surface: what ``toolcage.runtime`` and ``toolcage.runtime.abc`` export."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
import typing

import pytest
import toolcage.policies
import toolcage.policies.shell
import toolcage.runtime
import toolcage.runtime.abc
import toolcage.runtime.providers

PUBLIC_MODULES = [
    toolcage.policies,
    toolcage.policies.shell,
    toolcage.runtime,
    toolcage.runtime.abc,
    toolcage.runtime.providers,
]
INTERNALS = {
    "toolcage.runtime._registry": ["ToolRegistry", "ToolInfo"],
    "toolcage.runtime.agent._accumulator": ["ToolCallAccumulator"],
    "toolcage.runtime._decorator": ["FunctionTool"],
    "toolcage.runtime._result": ["ContentBlock"],
}


def runtime_modules() -> list[types.ModuleType]:
    package = toolcage.runtime
    names = [m.name for m in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    return [importlib.import_module(name) for name in names if not name.endswith("__main__")]


def is_protocol(value: object) -> bool:
    return inspect.isclass(value) and bool(getattr(value, "_is_protocol", False))


@pytest.mark.parametrize("module", PUBLIC_MODULES, ids=lambda m: m.__name__)
class TestExports:
    def test_all_is_sorted_and_complete(self, module: types.ModuleType) -> None:
        exported = module.__all__
        assert exported == sorted(exported)
        assert len(set(exported)) == len(exported)
        # dir(), not vars(): a name may be imported on first use (PEP 562)
        public = {
            name
            for name in dir(module)
            if not name.startswith("_") and not isinstance(getattr(module, name), types.ModuleType)
        }
        assert public == set(exported)

    def test_exported_names_report_the_module_they_are_imported_from(
        self, module: types.ModuleType
    ) -> None:
        for name in module.__all__:
            value = getattr(module, name)
            if not (inspect.isclass(value) or inspect.isfunction(value)):
                continue  # a type alias (a Union) has no module of its own
            home = value.__module__
            assert not any(part.startswith("_") for part in home.split(".")), name
            assert getattr(importlib.import_module(home), name) is value

    def test_annotations_of_exported_classes_still_resolve(self, module: types.ModuleType) -> None:
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value):
                typing.get_type_hints(value)


class TestPoliciesSurface:
    def test_the_shell_names_are_exported_by_policies_and_report_it(self) -> None:
        for name in toolcage.policies.shell.__all__:
            value = getattr(toolcage.policies.shell, name)
            assert getattr(toolcage.policies, name) is value
            assert value.__module__ == "toolcage.policies", name


class TestRuntimeSurface:
    def test_what_the_examples_use_is_exported(self) -> None:
        for name in ("Runtime", "tool", "UserMessage", "run_turn", "HttpModelClient"):
            assert name in toolcage.runtime.__all__
        assert toolcage.runtime.UserMessage.__module__ == "toolcage.runtime"
        assert toolcage.runtime.ToolcageConfig.__name__ == "ToolcageConfig"
        assert "load_config" in toolcage.runtime.__all__

    def test_internals_are_not_exported_but_stay_importable(self) -> None:
        for module_name, names in INTERNALS.items():
            module = importlib.import_module(module_name)
            for name in names:
                assert name not in toolcage.runtime.__all__
                assert not hasattr(toolcage.runtime, name)
                assert getattr(module, name) is not None

    def test_repr_names_the_public_module(self) -> None:
        assert repr(toolcage.runtime.ToolResult).endswith("'toolcage.runtime.ToolResult'>")
        assert toolcage.runtime.ToolCall("a", {}).__class__.__module__ == "toolcage.runtime"


class TestAbc:
    def test_every_export_is_a_protocol(self) -> None:
        for name in toolcage.runtime.abc.__all__:
            assert is_protocol(getattr(toolcage.runtime.abc, name)), name

    def test_every_protocol_of_the_runtime_is_there(self) -> None:
        seams = {
            value
            for module in runtime_modules()
            for value in vars(module).values()
            if is_protocol(value) and value.__module__.startswith("toolcage.runtime")
        }
        assert seams <= {getattr(toolcage.runtime.abc, n) for n in toolcage.runtime.abc.__all__}

    def test_the_seams_report_the_abc_module(self) -> None:
        tool = toolcage.runtime.abc.Tool
        assert tool.__module__ == "toolcage.runtime.abc"
        assert toolcage.runtime.abc.HostBinding.__module__.startswith("toolcage.host_bindings")
