"""The optional members of a guest's result document -- ``details``, ``display``,
``artifacts`` -- from an operator's guest loaded by ``Runtime.from_config``: well-formed ones
become the result's, malformed ones are left out with a warning, never a failed call, and
oversized ones are bounded like any output."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from toolcage.runtime import Artifact, ArtifactAction, Runtime, ToolResult
from toolcage.runtime._result import ARTIFACTS_TRUNCATED
from toolcage.wasm_tools.build import build_cached

pytestmark = pytest.mark.anyio

SOURCE = Path(__file__).parent / "document_guest" / "documents.c"
DECLARATION = {
    "name": "documents",
    "description": "Print a result document of the shape asked for.",
    "parameters": {
        "type": "object",
        "properties": {"shape": {"type": "string"}},
        "required": ["shape"],
        "additionalProperties": False,
    },
    "safety_tier": "read_only",
    "timeout": 10,
}


@pytest.fixture(scope="module")
def module() -> Path:
    [built] = build_cached([SOURCE])
    return built


@pytest.fixture
def config(module: Path, tmp_path: Path) -> Path:
    tools = tmp_path / "tools"
    tools.mkdir()
    shutil.copy(module, tools / "documents.wasm")
    (tools / "documents.json").write_text(json.dumps(DECLARATION))
    path = tmp_path / "toolcage.toml"
    path.write_text('[guest_tools]\ndirs = ["tools"]\n\n[limits]\ntruncate_bytes = 8192\n')
    return path


async def call(config: Path, shape: str) -> tuple[ToolResult, Runtime]:
    runtime = Runtime.from_config(config)
    async with runtime:
        result = await runtime.execute("documents", {"shape": shape})
    assert not result.is_error, result.output_text
    return result, runtime


class TestMalformedMembers:
    async def test_are_left_out_with_a_warning_naming_the_tool(
        self, config: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level(logging.WARNING, logger="toolcage.wasm"):
            result, _ = await call(config, "junk")
        assert result.output_text == "done"
        assert (result.details, result.display) == (None, None)
        assert result.artifacts == (Artifact("file", "/data/b", ArtifactAction.CREATED),)
        [warning] = [r.getMessage() for r in caplog.records if r.name == "toolcage.wasm"]
        assert warning.startswith("documents: its result document is malformed: ")
        assert "details must be a JSON object, not an array" in warning
        assert "display must be a string, not a number" in warning
        assert "artifacts 0, 1, 2, 4 must each be {kind, ref, action}" in warning

    async def test_a_display_keeps_its_first_line_and_a_bad_list_goes(
        self, config: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level(logging.WARNING, logger="toolcage.wasm"):
            result, _ = await call(config, "lines")
        assert (result.details, result.display, result.artifacts) == ({"n": 1}, "line one", ())
        assert "artifacts must be a list, not a string" in caplog.text

    async def test_a_document_with_only_its_text_is_unchanged(self, config: Path) -> None:
        result, _ = await call(config, "plain")
        assert (result.output_text, result.details, result.display) == ("plain", None, None)


class TestOversizedMembers:
    async def test_details_and_artifacts_are_bounded_and_kept_readable(self, config: Path) -> None:
        async with Runtime.from_config(config) as runtime:
            result = await runtime.execute("documents", {"shape": "huge"})
            assert not result.is_error, result.output_text
            details = result.details
            assert details["truncated"] is True
            full = await read_all(runtime, details["handle"])
            assert len(json.loads(full)["rows"]) == 20000
            *kept, last = result.artifacts
            assert 0 < len(kept) < 5000
            assert kept[0] == Artifact("file", "/data/f00000", ArtifactAction.CREATED)
            assert (last.kind, last.action) == (ARTIFACTS_TRUNCATED, ArtifactAction.OMITTED)
            handle = last.ref.split('handle "')[1].split('"')[0]
            assert len(json.loads(await read_all(runtime, handle))) == 5000
        sent = json.dumps(result.envelope()).encode()
        assert len(sent) < 3 * 8192


async def read_all(runtime: Runtime, handle: str) -> str:
    data, offset = "", 0
    while True:
        page = await runtime.execute(
            "tool_output_read", {"handle": handle, "offset": offset, "max_bytes": 8192}
        )
        assert not page.is_error, page.output_text
        data += page.output_text
        offset = page.details["next_offset"]
        if page.details["eof"]:
            return data


def guest_config(tmp_path: Path, name: str) -> Path:
    """A config whose guest tool ``name`` is ``document_guest/NAME.c``, built without the SDK."""
    [built] = build_cached([SOURCE.parent / f"{name}.c"])
    tools = tmp_path / "tools"
    tools.mkdir()
    shutil.copy(built, tools / f"{name}.wasm")
    (tools / f"{name}.json").write_text(json.dumps({**DECLARATION, "name": name}))
    path = tmp_path / "toolcage.toml"
    path.write_text('[guest_tools]\ndirs = ["tools"]\n')
    return path


class TestEarlierSdk:
    """A module built with an earlier SDK leaves a JSON result document (``toolcage_result``)."""

    async def test_its_success_document_is_read(self, tmp_path: Path) -> None:
        async with Runtime.from_config(guest_config(tmp_path, "earlier_sdk")) as runtime:
            result = await runtime.execute("earlier_sdk", {"shape": "ok"})
        assert not result.is_error, result.output_text
        assert result.output_text == 'line "one"\nline two \u00e9'
        assert (result.details, result.display) == ({"n": 1}, "Shown")

    async def test_its_error_document_is_the_error(self, tmp_path: Path) -> None:
        async with Runtime.from_config(guest_config(tmp_path, "earlier_sdk")) as runtime:
            result = await runtime.execute("earlier_sdk", {"shape": "fail"})
        assert result.error is not None
        assert (result.error.kind.value, result.error.message) == ("validation_error", 'no "x"')
        assert result.error.field == "shape"


class TestLyingReply:
    """A text reply whose parts do not fit still answers, with a warning naming the tool."""

    @pytest.mark.parametrize(("shape", "text"), [("long", ""), ("list", "text")])
    async def test_answers_its_text_and_warns(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture, shape: str, text: str
    ) -> None:
        with caplog.at_level(logging.WARNING, logger="toolcage.wasm"):
            async with Runtime.from_config(guest_config(tmp_path, "lying_reply")) as runtime:
                result = await runtime.execute("lying_reply", {"shape": shape})
        assert not result.is_error, result.output_text
        assert (result.output_text, result.details) == (text, None)
        [warning] = [r.getMessage() for r in caplog.records if r.name == "toolcage.wasm"]
        assert warning == "lying_reply: its reply is malformed: its document is no success"
