"""Validation messages state the field, the limit and the actual size, and never echo a large
value: every bound of every built-in tool's schema, broken with a large value, through
``Runtime.from_config`` + ``execute``; enum values matched by their spelling; the
validation-retry schema excerpt."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from toolcage.runtime import Runtime, SafetyTier, ToolExecutionContext, tool

pytestmark = pytest.mark.anyio

MAX_MESSAGE_CHARS = 400
HUGE = 100_000
CONFIG = '[state]\nurl = "data/state.db"\n\n[state.vault]\ndir = "vault"\n'


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    (tmp_path / "vault").mkdir()
    (tmp_path / "toolcage.toml").write_text(CONFIG)
    async with Runtime.from_config(tmp_path / "toolcage.toml") as made:
        yield made


def _valid(schema: dict[str, Any]) -> Any:
    """A value that meets a (simple) property schema."""
    if "enum" in schema:
        return schema["enum"][0]
    match schema.get("type"):
        case "string":
            return "x" * max(schema.get("minLength", 1), 1)
        case "integer":
            return schema.get("minimum", 1)
        case "boolean":
            return False
        case "array":
            return [_valid(schema.get("items", {}))] * max(schema.get("minItems", 1), 1)
        case "object":
            return {}
    return "x"


def _broken(schema: dict[str, Any]) -> Iterator[tuple[str, Any, list[str], str]]:
    """(rule, a large value breaking it, the texts the message must name, a path suffix)."""
    if "maxLength" in schema:
        limit = schema["maxLength"]
        size = limit + HUGE
        yield "maxLength", "é" * size, [f"{limit:,}", f"{size:,} characters"], ""
    if "maxItems" in schema:
        limit = schema["maxItems"]
        size = limit + HUGE
        item = _valid(schema.get("items", {}))
        yield "maxItems", [item] * size, [f"{limit:,}", f"{size:,} items"], ""
    if "minItems" in schema:
        limit = schema["minItems"]
        yield "minItems", [], [f"at least {limit:,}", "0 items"], ""
    if "maximum" in schema:
        limit = schema["maximum"]
        yield "maximum", 10**4000, [f"maximum of {limit}", "4,001 digits"], ""
    if "minimum" in schema:
        limit = schema["minimum"]
        yield "minimum", -(10**4000), [f"minimum of {limit}", "4,001 digits"], ""
    if "enum" in schema:
        yield "enum", "é" * HUGE, [*map(str, schema["enum"][:2]), f"{HUGE:,} characters"], ""
    if schema.get("type") in ("string", "integer", "boolean"):
        yield "type", list(range(HUGE)), [schema["type"], f"{HUGE:,} items"], ""
    items = schema.get("items", {})
    if "maxLength" in items:
        limit = items["maxLength"]
        size = limit + HUGE
        value = [_valid(items), "é" * size]
        yield "items.maxLength", value, [f"{limit:,}", f"{size:,} characters"], "[1]"


def _cases() -> Iterator[Any]:
    from toolcage.runtime.wasm import discover_specs

    for spec in discover_specs():
        parameters = spec.decl.parameters
        required = parameters.get("required", [])
        properties = parameters.get("properties", {})
        for name, schema in properties.items():
            for rule, value, named, suffix in _broken(schema):
                args = {n: _valid(properties[n]) for n in required if n != name}
                args[name] = value
                case_id = f"{spec.decl.name}.{name}.{rule}"
                yield pytest.param(spec.decl.name, args, name + suffix, named, id=case_id)
        yield pytest.param(
            spec.decl.name,
            {**{n: _valid(properties[n]) for n in required}, "é" * HUGE: 1},
            None,
            ["unknown field", "allowed fields"],
            id=f"{spec.decl.name}.unknown-field",
        )


class TestEveryBoundOfEveryBuiltIn:
    @pytest.mark.parametrize(("name", "args", "field", "named"), list(_cases()))
    async def test_the_message_names_field_limit_and_size(
        self,
        runtime: Runtime,
        name: str,
        args: dict[str, Any],
        field: str | None,
        named: list[str],
    ) -> None:
        ctx = ToolExecutionContext(user_id="ada", session_id="s1")
        result = await runtime.execute(name, args, ctx)
        assert result.error is not None, result.output_text[:200]
        envelope = result.error.envelope(name)
        message = envelope["message"]
        assert envelope["error_type"] == "validation_error", message
        assert len(message) < MAX_MESSAGE_CHARS, message
        if field is not None:
            assert envelope["field"] == field
            assert f"'{field}'" in message
        for text in named:
            assert text in message, message
        assert "éééééééééééééééééééééééééééééééééééééééééé" not in message  # 42: no echo
        assert len(str(envelope.get("details", ""))) < 1000


class TestSpellings:
    @pytest.mark.parametrize(
        ("sent", "shown"),
        [("ISO8601", "+00:00"), ("ISO-8601", "+00:00"), ("Human Readable", "UTC (UTC")],
    )
    async def test_the_seed_spellings_of_a_format_are_accepted(
        self, runtime: Runtime, sent: str, shown: str
    ) -> None:
        result = await runtime.execute("get_current_time", {"format": sent, "timezone": "UTC"})
        assert not result.is_error, result.output_text
        assert shown in result.output_text

    @pytest.mark.parametrize("encoding", ["UTF-8", "utf8", "Latin-1", "LATIN1"])
    async def test_encodings_spelled_otherwise_are_read(
        self, runtime: Runtime, encoding: str, tmp_path: Path
    ) -> None:
        (tmp_path / "workspace").mkdir(exist_ok=True)
        (tmp_path / "workspace" / "a.txt").write_text("caf\u00e9\n")
        result = await runtime.execute("file_read", {"path": "a.txt", "encoding": encoding})
        assert not result.is_error, result.output_text
        assert "caf" in result.output_text

    async def test_the_tool_receives_the_value_as_its_schema_spells_it(self) -> None:
        seen: list[str] = []

        @tool(safety_tier=SafetyTier.READ_ONLY)
        async def send(method: Literal["GET", "POST"], unit: Literal["km/h"] | None = None) -> str:
            """Record the method."""
            seen.append(f"{method} {unit}")
            return "ok"

        result = await Runtime(tools=[send]).execute("send", {"method": "post", "unit": "KM/H"})
        assert not result.is_error, result.output_text
        assert seen == ["POST km/h"]

    async def test_values_an_enum_tells_apart_stay_exact(self) -> None:
        @tool(safety_tier=SafetyTier.READ_ONLY)
        async def pick(mode: Literal["a", "A", "iso8601", "b-c"]) -> str:
            """Echo the mode."""
            return mode

        runtime = Runtime(tools=[pick])
        assert (await runtime.execute("pick", {"mode": "A"})).output_text == "A"
        assert (await runtime.execute("pick", {"mode": "ISO_8601"})).output_text == "iso8601"
        assert (await runtime.execute("pick", {"mode": "B_C"})).output_text == "b-c"
        refused = await runtime.execute("pick", {"mode": "á"})
        assert refused.error is not None
        assert refused.error.envelope("pick")["error_type"] == "validation_error"


class TestSeedTimeouts:
    @pytest.mark.parametrize("name", ["http_request", "web_fetch"])
    async def test_http_tools_default_to_thirty_seconds(self, runtime: Runtime, name: str) -> None:
        assert runtime.registry.get(name).timeout == 30


class TestSchemaExcerpt:
    async def test_the_envelope_carries_the_failing_fields_schema(self, runtime: Runtime) -> None:
        result = await runtime.execute("scratchpad_write", {"items": ["x" * 241]})
        assert result.error is not None
        assert result.error.field == "items[0]"
        assert result.error.details == {
            "schema": {"type": "string", "minLength": 1, "maxLength": 240}
        }

    async def test_a_missing_field_shows_its_own_schema(self, runtime: Runtime) -> None:
        result = await runtime.execute("memory_save", {"tags": ["x"]})
        assert result.error is not None
        assert result.error.message == "missing required field 'content'"
        assert result.error.details == {
            "schema": {"type": "string", "minLength": 1, "maxLength": 100000}
        }


class TestLargeValuesTheSchemaAdmits:
    async def test_a_url_with_a_huge_host_is_refused_by_its_length(self, runtime: Runtime) -> None:
        url = "http://" + "é" * HUGE + "/"
        result = await runtime.execute("http_request", {"url": url})
        assert result.error is not None
        assert len(result.error.message) < MAX_MESSAGE_CHARS
        assert f"{HUGE:,} characters" in result.error.message
        assert "253" in result.error.message
