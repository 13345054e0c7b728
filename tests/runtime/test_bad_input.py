"""Input that is the caller's fault gets a validation error naming the field, never a crash.

Each case goes through ``Runtime.execute``; every envelope must also encode as UTF-8 JSON,
the way a host sends it on.
"""

from __future__ import annotations

import json
from enum import IntEnum
from pathlib import Path
from typing import Any

import pytest
from toolcage.runtime import Runtime, ToolResult, tool
from toolcage.runtime._decoding import _flat_bound, check_plain_json

from .sample_tools import describe, echo

pytestmark = pytest.mark.anyio

DEEP = 100_000


def nested_text(depth: int) -> str:
    return '{"text": ' + "[" * depth + "]" * depth + "}"


def nested_value(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def encodable(result: ToolResult) -> dict[str, Any]:
    envelope = result.envelope()
    json.dumps(envelope, ensure_ascii=False).encode("utf-8")
    return envelope


seen: list[str] = []


@tool
def record(text: str) -> str:
    """Keep the text it was given."""
    seen.append(text)
    return "kept"


class TestNesting:
    @pytest.mark.parametrize("depth", [3_000, DEEP])
    async def test_deep_json_text_is_refused_before_parsing(self, depth: int) -> None:
        env = encodable(await Runtime(tools=[echo]).execute("echo", nested_text(depth)))
        assert env["error_type"] == "validation_error"
        assert "nest deeper than 64 levels" in env["message"]

    @pytest.mark.parametrize("depth", [3_000, DEEP])
    async def test_deep_mapping_is_refused_with_its_field(self, depth: int) -> None:
        env = encodable(await Runtime(tools=[echo]).execute("echo", {"text": nested_value(depth)}))
        assert env["error_type"] == "validation_error"
        assert env["field"].startswith("text[0][0]")
        assert "nest deeper than 64 levels" in env["message"]

    async def test_deep_json_inside_a_string_parameter_is_refused(self) -> None:
        args = {"count": 1, "ratio": 1, "flag": True, "extra": {}, "colour": "red"}
        args["tags"] = "[" * DEEP + "]" * DEEP
        env = encodable(await Runtime(tools=[describe]).execute("describe", args))
        assert (env["error_type"], env["field"]) == ("validation_error", "tags")

    async def test_ordinary_nesting_still_works(self) -> None:
        nested = '{"text": "' + "x" * 10 + '", "pad": ' + "[" * 10 + "]" * 10 + "}"
        env = encodable(await Runtime(tools=[echo]).execute("echo", nested))
        assert env["message"] == (
            "the arguments object has unknown field 'pad'; allowed fields: text"
        )


class TestNumbers:
    async def test_a_huge_integer_in_json_text_is_refused_with_its_field(self) -> None:
        text = '{"count": ' + "7" * 5_000 + "}"
        env = encodable(await Runtime(tools=[describe]).execute("describe", text))
        assert (env["error_type"], env["field"]) == ("validation_error", "count")
        assert "is an integer of more than 4,300 digits" in env["message"]

    async def test_a_huge_integer_value_is_refused_with_its_field(self) -> None:
        env = encodable(await Runtime(tools=[echo]).execute("echo", {"text": [1, 10**5_000]}))
        assert (env["error_type"], env["field"]) == ("validation_error", "text[1]")

    @pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
    async def test_numbers_json_cannot_carry_are_refused(self, literal: str) -> None:
        text = '{"count": 1, "ratio": ' + literal + "}"
        env = encodable(await Runtime(tools=[describe]).execute("describe", text))
        assert (env["error_type"], env["field"]) == ("validation_error", "ratio")


class TestText:
    async def test_a_raw_lone_surrogate_in_json_text_is_refused(self) -> None:
        seen.clear()
        env = encodable(await Runtime(tools=[record]).execute("record", '{"text": "a\ud800b"}'))
        assert (env["error_type"], env["field"]) == ("validation_error", "text")
        assert "lone surrogate (U+D800)" in env["message"]
        assert seen == []

    async def test_an_escaped_lone_surrogate_never_reaches_the_tool(self) -> None:
        seen.clear()
        env = encodable(await Runtime(tools=[record]).execute("record", '{"text": "a\\udc80"}'))
        assert (env["error_type"], env["field"]) == ("validation_error", "text")
        assert seen == []

    async def test_a_lone_surrogate_in_a_field_name_is_refused(self) -> None:
        env = encodable(await Runtime(tools=[record]).execute("record", {"te\udfffxt": "a"}))
        assert env["error_type"] == "validation_error"
        assert "lone surrogate" in env["message"]

    async def test_valid_unicode_passes(self) -> None:
        seen.clear()
        result = await Runtime(tools=[record]).execute("record", '{"text": "\\ud83d\\ude00 é"}')
        assert encodable(result)["result"] == "kept"
        assert seen == ["😀 é"]

    async def test_values_that_are_not_json_are_refused(self) -> None:
        env = encodable(await Runtime(tools=[echo]).execute("echo", {"text": b"bytes"}))
        assert (env["error_type"], env["field"]) == ("validation_error", "text")
        assert "bytes value, which is not JSON" in env["message"]


class TestToolNames:
    @pytest.mark.parametrize("name", [b"echo", 7, None, ["echo"]])
    async def test_a_name_that_is_not_a_string_is_a_validation_error(self, name: Any) -> None:
        env = encodable(await Runtime(tools=[echo]).execute(name, {"text": "x"}))
        assert (env["error_type"], env["field"]) == ("validation_error", "tool")
        assert env["message"].startswith("the tool name must be a string, got ")
        assert isinstance(env["tool"], str)

    @pytest.mark.parametrize("name", ["ec\ud800ho", "x" * 1_000_000, "Echo", "echo\n"])
    async def test_a_name_no_tool_can_have_is_not_found_and_shown_safely(self, name: str) -> None:
        env = encodable(await Runtime(tools=[echo]).execute(name, {"text": "x"}))
        assert env["error_type"] == "not_found"
        assert len(env["tool"]) <= 128
        assert env["message"] == f"Tool {env['tool']} is not available"

    async def test_through_from_config_too(self, tmp_path: Path) -> None:
        (tmp_path / "workspace").mkdir()
        config = tmp_path / "toolcage.toml"
        config.write_text(
            '[[mounts.areas]]\nhost = "workspace"\nguest = "/workspace"\n'
            'tiers = { read_only = "ro" }\n'
        )
        async with Runtime.from_config(config) as runtime:
            env = encodable(await runtime.execute(b"file_read", {"path": "/workspace/x"}))  # type: ignore[arg-type]
            assert (env["error_type"], env["field"]) == ("validation_error", "tool")
            deep = encodable(await runtime.execute("file_read", nested_text(DEEP)))
            assert deep["error_type"] == "validation_error"


class Size(IntEnum):
    ONE = 1


FLAT_OBJECTS: list[dict[str, Any]] = [
    {},
    {"text": "plain", "count": 7, "ratio": 0.5, "flag": True, "none": None},
    {"count": -(2**13999), "big": 2**13999},
    {"text": "é", "n": 1},  # a non-ASCII value: the full walk
    {"ünï": "name"},  # a non-ASCII name: the full walk
    {"list": [1, 2], "n": 1},  # nested: the full walk
    {"count": Size.ONE},  # an int subclass: the full walk
]


class TestFlatMappings:
    """An arguments mapping of plain scalars is measured without the full walk; whatever it
    holds that is not plain JSON still takes the walk, and its error."""

    @pytest.mark.parametrize("args", FLAT_OBJECTS, ids=range(len(FLAT_OBJECTS)))
    def test_the_flat_bound_is_the_full_walks(self, args: dict[str, Any]) -> None:
        assert _flat_bound(args) in (-1, check_plain_json(args))

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            (float("nan"), "which JSON cannot carry"),
            (float("inf"), "which JSON cannot carry"),
            (10**5_000, "is an integer of more than 4,300 digits"),
            ("a\ud800b", "lone surrogate (U+D800)"),
            (b"bytes", "bytes value, which is not JSON"),
        ],
        ids=["nan", "infinity", "huge-int", "lone-surrogate", "bytes"],
    )
    async def test_a_flat_value_that_is_not_json_is_refused_with_its_field(
        self, value: Any, expected: str
    ) -> None:
        seen.clear()
        env = encodable(await Runtime(tools=[record]).execute("record", {"text": value}))
        assert (env["error_type"], env["field"]) == ("validation_error", "text")
        assert expected in env["message"]
        assert seen == []

    async def test_a_flat_object_over_the_byte_limit_is_refused_with_its_size(self) -> None:
        runtime = Runtime(tools=[record])
        limit = runtime.pipeline.limits.max_argument_bytes
        env = encodable(await runtime.execute("record", {"text": "x" * limit}))
        assert env["error_type"] == "validation_error"
        assert f"arguments are {limit + 12:,} bytes, over the limit of {limit:,}" in env["message"]

    async def test_a_flat_object_of_escapes_under_the_limit_passes(self) -> None:
        seen.clear()
        runtime = Runtime(tools=[record])
        text = '"' * (runtime.pipeline.limits.max_argument_bytes // 4)  # bound > limit > size
        assert encodable(await runtime.execute("record", {"text": text}))["result"] == "kept"
        assert seen == [text]
