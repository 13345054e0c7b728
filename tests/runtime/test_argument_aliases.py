"""Parameter names other agents' tools use (``file_path`` for ``path``, ``cmd`` for
``command``, ...) reach the declared parameter, and a required parameter sent empty or null
is missing, with an error that says so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from toolcage.runtime import Runtime, SafetyTier, ToolResult, tool

pytestmark = pytest.mark.anyio


@tool(safety_tier=SafetyTier.READ_ONLY)
def open_file(path: str, encoding: str = "utf-8") -> str:
    """Say which file would be opened, and how."""
    return f"{path} as {encoding}"


@tool(safety_tier=SafetyTier.READ_ONLY)
def run(command: str) -> str:
    """Echo the command."""
    return command


@tool(safety_tier=SafetyTier.READ_ONLY)
def lookup(query: str) -> str:
    """Echo the query."""
    return query


@tool(safety_tier=SafetyTier.READ_ONLY)
def grep(query: str, pattern: str) -> str:
    """Declares two names of one alias group."""
    return f"{query}/{pattern}"


@tool(safety_tier=SafetyTier.READ_ONLY)
def fetch(url: str) -> str:
    """Echo the URL."""
    return url


@tool(safety_tier=SafetyTier.READ_ONLY)
def replace(path: str, old_string: str, new_string: str) -> str:
    """Echo the replacement."""
    return f"{path}: {old_string!r} -> {new_string!r}"


@tool(safety_tier=SafetyTier.READ_ONLY)
def annotate(note: str | None) -> str:
    """Required, but null is a value here."""
    return repr(note)


HOST_TOOLS = [open_file, run, lookup, grep, fetch, replace, annotate]


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "notes.txt").write_text("alpha beta\n")
    (tmp_path / "toolcage.toml").write_text("")
    async with Runtime.from_config(tmp_path / "toolcage.toml", tools=HOST_TOOLS) as runtime:
        yield runtime


async def text(runtime: Runtime, name: str, args: dict[str, Any]) -> str:
    result = await runtime.execute(name, args)
    assert not result.is_error, result.envelope()
    return result.output_text


async def error(runtime: Runtime, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result: ToolResult = await runtime.execute(name, args)
    envelope = result.envelope()
    assert envelope["error_type"] == "validation_error", envelope
    return envelope


class TestAliases:
    @pytest.mark.parametrize(
        "alias", ["file_path", "filepath", "filename", "file_name", "file", "filePath"]
    )
    async def test_path_spellings(self, runtime: Runtime, alias: str) -> None:
        assert await text(runtime, "open_file", {alias: "/a"}) == "/a as utf-8"

    @pytest.mark.parametrize(
        ("tool_name", "alias", "value"),
        [
            ("run", "cmd", "ls"),
            ("lookup", "q", "needle"),
            ("lookup", "pattern", "needle"),
            ("fetch", "uri", "https://example.com"),
            ("fetch", "link", "https://example.com"),
        ],
    )
    async def test_other_groups(
        self, runtime: Runtime, tool_name: str, alias: str, value: str
    ) -> None:
        assert await text(runtime, tool_name, {alias: value}) == value

    async def test_edit_spellings(self, runtime: Runtime) -> None:
        args = {"file_path": "/a", "old_str": "x", "new_str": "y"}
        assert await text(runtime, "replace", args) == "/a: 'x' -> 'y'"

    async def test_the_declared_name_wins_and_the_alias_is_unknown(self, runtime: Runtime) -> None:
        envelope = await error(runtime, "open_file", {"path": "/a", "file_path": "/b"})
        assert "unknown field 'file_path'" in envelope["message"]

    async def test_a_group_with_two_declared_names_maps_nothing(self, runtime: Runtime) -> None:
        envelope = await error(runtime, "grep", {"q": "x", "pattern": "y"})
        assert "unknown field 'q'" in envelope["message"]

    async def test_a_built_in_guest_takes_file_path(self, runtime: Runtime) -> None:
        result = await text(runtime, "file_read", {"file_path": "/workspace/notes.txt"})
        assert "alpha beta" in result


class TestEmptyAndNull:
    async def test_an_empty_required_parameter_is_missing(self, runtime: Runtime) -> None:
        envelope = await error(runtime, "open_file", {"path": ""})
        assert envelope["message"] == "'path' is required and was empty"
        assert envelope["field"] == "path"

    async def test_a_null_required_parameter_is_missing(self, runtime: Runtime) -> None:
        envelope = await error(runtime, "run", {"command": None})
        assert envelope["message"] == "'command' is required and was null"

    async def test_an_empty_alias_is_missing_under_the_declared_name(
        self, runtime: Runtime
    ) -> None:
        envelope = await error(runtime, "open_file", {"file_path": ""})
        assert envelope["message"] == "'path' is required and was empty"

    async def test_free_text_may_be_empty(self, runtime: Runtime) -> None:
        args = {"path": "/a", "old_string": "x", "new_string": ""}
        assert await text(runtime, "replace", args) == "/a: 'x' -> ''"

    async def test_null_stays_a_value_where_the_schema_admits_it(self, runtime: Runtime) -> None:
        assert await text(runtime, "annotate", {"note": None}) == "None"

    async def test_an_optional_null_is_left_out(self, runtime: Runtime) -> None:
        assert await text(runtime, "open_file", {"path": "/a", "encoding": None}) == ("/a as utf-8")

    @pytest.mark.parametrize("name", ["file_read", "file_write", "file_delete", "file_list"])
    async def test_a_file_tool_refuses_an_empty_path_by_name(
        self, runtime: Runtime, name: str
    ) -> None:
        args = {"content": "x"} if name == "file_write" else {}
        envelope = await error(runtime, name, {"path": "", **args})
        if name == "file_list":  # optional (its default is /workspace): the path check says it
            assert envelope["message"] == "file_list: path: path '' is empty"
        else:
            assert envelope["message"] == "'path' is required and was empty"
        assert envelope["field"] == "path"

    async def test_a_built_in_guest_writes_an_empty_file(
        self, runtime: Runtime, tmp_path: Path
    ) -> None:
        await text(runtime, "file_write", {"filepath": "/workspace/empty.txt", "content": ""})
        assert (tmp_path / "workspace" / "empty.txt").read_bytes() == b""
