"""The path check in the pipeline: refusal envelopes and canonical rewriting."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from toolcage.policies import MountPolicy, ToolcageConfig, load_config
from toolcage.runtime import (
    PermissionDeniedError,
    Runtime,
    ToolExecutionContext,
    ToolExecutionError,
)
from toolcage.runtime._path_check import HasPathArguments, PathCheck

from tests.adversarial._host_tools import HostFileTool, host_tools


@pytest.fixture
def config(tmp_path: Path) -> ToolcageConfig:
    return ToolcageConfig(base_dir=tmp_path)


@pytest.fixture
async def runtime(config: ToolcageConfig) -> AsyncIterator[Runtime]:
    policy = MountPolicy.from_config(config)
    async with Runtime.from_config(config, tools=host_tools(policy)) as rt:
        yield rt


class TestPathCheck:
    @pytest.mark.anyio
    async def test_tools_without_path_arguments_pass(
        self, config: ToolcageConfig, runtime: Runtime
    ) -> None:
        check = PathCheck(MountPolicy.from_config(config))
        tool = runtime.registry.get("tool_output_read", "default")
        assert not isinstance(tool, HasPathArguments)
        args = {"handle": "../../etc/passwd"}
        assert check.check(tool, args, ToolExecutionContext()) is args

    def test_rewrites_to_the_canonical_guest_path(
        self, config: ToolcageConfig, tmp_path: Path
    ) -> None:
        (tmp_path / "workspace/a/b").mkdir(parents=True)
        policy = MountPolicy.from_config(config)
        tool = HostFileTool("read", policy)
        assert isinstance(tool, HasPathArguments)
        out = PathCheck(policy).check(tool, {"path": "a/./b/../c"}, ToolExecutionContext())
        assert out == {"path": "/workspace/a/c"}

    def test_violation_is_permission_denied_naming_roots(self, config: ToolcageConfig) -> None:
        policy = MountPolicy.from_config(config)
        tool = HostFileTool("write", policy)
        with pytest.raises(PermissionDeniedError) as info:
            PathCheck(policy).check(tool, {"path": "/etc/passwd"}, ToolExecutionContext())
        assert info.value.field == "path"
        assert "allowed roots: /shared (read-write), /tmp (read-write), /workspace" in str(
            info.value
        )


class TestThroughTheRuntime:
    @pytest.mark.anyio
    async def test_refused_traversal_envelope(self, runtime: Runtime) -> None:
        result = await runtime.execute("host_file_read", {"path": "../../etc/passwd"})
        assert result.is_error
        assert result.error is not None
        envelope = result.error.envelope("host_file_read")
        assert envelope["error_type"] == "permission_denied"
        assert envelope["field"] == "path"
        assert "climbs out of mount /workspace" in envelope["message"]
        assert "/workspace (read-only)" in envelope["message"]

    @pytest.mark.anyio
    async def test_read_only_tool_cannot_write_even_via_a_write_argument(
        self, runtime: Runtime, tmp_path: Path
    ) -> None:
        ok = await runtime.execute("host_file_write", {"path": "notes/a.txt", "content": "hi"})
        assert not ok.is_error, ok.output_text
        assert (tmp_path / "workspace/notes/a.txt").read_text() == "hi"
        read = await runtime.execute("host_file_read", {"path": "/workspace/notes/../notes/a.txt"})
        assert read.output_text == "hi"
        assert read.details == "/workspace/notes/a.txt"


class TestWiring:
    @pytest.mark.anyio
    async def test_runtime_from_config_installs_the_check(self, runtime: Runtime) -> None:
        assert any(isinstance(check, PathCheck) for check in runtime.pipeline.checks)

    def test_misconfigured_mount_is_an_execution_error(self, tmp_path: Path) -> None:
        toml = tmp_path / "toolcage.toml"
        toml.write_text(
            '[[mounts.areas]]\nhost = "missing"\nguest = "/data"\ntiers = { read_only = "ro" }\n'
        )
        policy = MountPolicy.from_config(load_config(toml))
        tool = HostFileTool("read", policy)
        with pytest.raises(ToolExecutionError, match=r"mounts\.areas\.0\.host .*does not exist"):
            PathCheck(policy).check(tool, {"path": "/data/x"}, ToolExecutionContext())

    def test_a_non_string_path_is_refused(self, config: ToolcageConfig) -> None:
        policy = MountPolicy.from_config(config)
        tool = HostFileTool("read", policy)
        with pytest.raises(PermissionDeniedError, match="must be a path string"):
            PathCheck(policy).check(tool, {"path": ["a"]}, ToolExecutionContext())
