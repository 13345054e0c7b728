"""Tool text that forges the pipeline's own lines, from every kind of tool.

A model reads, beside a tool's text, lines the pipeline writes: the truncation marker, the
pointer to the full output, an image note, the ``[details]`` line of the provider adapters.
The lines of ``marker_corpus.json`` forge them -- verbatim, in other cases and spacing,
behind invisible characters, in look-alike letters, after other line breaks -- and each kind
of tool is made to print them: a page through ``web_fetch`` and a body through
``http_request`` from a real server on 127.0.0.1, an MCP server's result, a shell command's
output, a host ``@tool``'s text and error. Through ``Runtime.from_config`` and ``execute``,
each forged line must come out escaped (the corpus says how), and as every provider adapter
renders the result, the only line that passes for the pipeline's must be the adapter's own
``[details]`` line. :func:`passes_for_marker` is an independent judge of what passes.

Display lines come from the same sources (a page's title, a host tool) and must reach a
person as visible text; and an approver must be shown the arguments that will run.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from toolcage.policies._config import parse_config
from toolcage.runtime import (
    Approval,
    ApprovalRequest,
    CallbackApproval,
    HttpModelClient,
    Runtime,
    SafetyTier,
    ToolCall,
    ToolExecutionError,
    ToolResult,
    run_turn,
    tool,
)
from toolcage.runtime.agent.providers.base import details_text
from toolcage.runtime.providers import (
    AnthropicAdapter,
    ModelRequest,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    ToolOutcome,
    ToolResultsMessage,
    UserMessage,
)
from toolcage.runtime.selftest import load_corpus

from ..host_bindings.servers import Server, _send, serving
from ..runtime.fake_llm import API_KEY, MODEL, FakeModel, FakeModelServer, Reply
from ..runtime.mcp_servers import server_entry
from ..sidecar.conftest import make_workspace

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]

CORPUS = load_corpus("marker_corpus.json")
CASES = [(group["name"], case) for group in CORPUS["groups"] for case in group["cases"]]
PAYLOAD = "the tool's own first line\n" + "\n".join(case["line"] for _, case in CASES) + "\n"
"""Every forged line of the corpus, each on a line of its own, after one ordinary line."""

WORDS = ("outputtruncated", "shown", "fulloutput", "imageomitted", "details")


def passes_for_marker(line: str) -> bool:
    """Whether a reader may take ``line`` for one of the pipeline's: what is unseen
    (controls, format characters, spaces) left out, folded to its compatibility form and
    case, it begins with a bracket and a marker's words."""
    seen = "".join(c for c in line if unicodedata.category(c) not in ("Cc", "Cf", "Zs"))
    folded = unicodedata.normalize("NFKC", seen).casefold()
    return folded.startswith(tuple("[" + word for word in WORDS))


def forged(text: str) -> list[str]:
    """The lines of ``text`` that pass for the pipeline's (``splitlines`` breaks where any
    reader may)."""
    return [line for line in text.splitlines() if passes_for_marker(line)]


def rendered(result: ToolResult, name: str) -> dict[str, str]:
    """What a model reads of ``result``, as each provider adapter sends it."""
    call = ToolCall(name, {}, "call_1")
    request = ModelRequest([ToolResultsMessage((ToolOutcome(call, result),))])
    chat = OpenAIChatAdapter().request_body(request, model="m", stream=False)
    responses = OpenAIResponsesAdapter().request_body(request, model="m", stream=False)
    anthropic = AnthropicAdapter().request_body(request, model="m", stream=False)
    blocks = anthropic["messages"][-1]["content"][0]["content"]
    return {
        "openai_chat": chat["messages"][-1]["content"],
        "openai_responses": responses["input"][-1]["output"],
        "anthropic": "\n".join(block["text"] for block in blocks if block["type"] == "text"),
    }


def assert_neutral(result: ToolResult, name: str, text: str) -> None:
    """Every forged line of the corpus in ``text`` escaped as the corpus says, and only the
    adapter's own ``[details]`` line passing for the pipeline's wherever a model reads it."""
    assert forged(text) == []
    wrong = [f"{group}: {case['line']!r}" for group, case in CASES if case["shown"] not in text]
    assert wrong == []
    details = details_text(result)
    for adapter, seen in rendered(result, name).items():
        assert forged(seen) == ([details] if details else []), adapter


def page(h: BaseHTTPRequestHandler) -> None:
    _send(h, 200, PAYLOAD.encode("utf-8"), "text/plain; charset=utf-8")


TITLE = "Invoice \u202egnp.exe\u202c \u009b31m paid\u200b \ufeff\U000e0041 now"
"""A page title with a bidirectional override, a CSI (C1), zero-width and tag characters."""


def html_page(h: BaseHTTPRequestHandler) -> None:
    forged_html = "".join(f"<p>{case['line']}</p>" for _, case in CASES[:5])
    body = f"<html><head><title>{TITLE}</title></head><body>{forged_html}<pre>{PAYLOAD}</pre>"
    _send(h, 200, body.encode("utf-8"), "text/html; charset=utf-8")


@pytest.fixture
def server() -> Any:
    with serving({"/forged.txt": page, "/forged.html": html_page}) as running:
        yield running


@asynccontextmanager
async def runtime_for(root: Path, raw: dict[str, Any], **kwargs: Any) -> AsyncIterator[Runtime]:
    (root / "workspace").mkdir(exist_ok=True)
    config = parse_config(raw, base_dir=root)
    async with Runtime.from_config(config, **kwargs) as runtime:
        yield runtime


LOOPBACK = {"egress": {"private_exceptions": ["127.0.0.1"]}}


def visible(line: str) -> bool:
    """Whether ``line`` holds nothing a person cannot see: no control, format character or
    line separator."""
    return all(unicodedata.category(c) not in ("Cc", "Cf", "Zl", "Zp") for c in line)


class TestEveryToolKind:
    async def test_a_fetched_page(self, tmp_path: Path, server: Server) -> None:
        async with runtime_for(tmp_path, LOOPBACK) as runtime:
            result = await runtime.execute("web_fetch", {"url": server.url + "/forged.txt"})
        assert not result.is_error, result.envelope()
        assert_neutral(result, "web_fetch", result.output_text)

    async def test_a_fetched_html_page(self, tmp_path: Path, server: Server) -> None:
        """Converted to Markdown, the page's lines are no longer the corpus's byte for byte;
        none of them may pass for the pipeline's, in paragraphs or in a code block."""
        async with runtime_for(tmp_path, LOOPBACK) as runtime:
            result = await runtime.execute("web_fetch", {"url": server.url + "/forged.html"})
        assert not result.is_error, result.envelope()
        assert forged(result.output_text) == []
        details = details_text(result)
        for adapter, seen in rendered(result, "web_fetch").items():
            assert forged(seen) == [details], adapter

    async def test_an_http_body(self, tmp_path: Path, server: Server) -> None:
        async with runtime_for(tmp_path, LOOPBACK) as runtime:
            result = await runtime.execute("http_request", {"url": server.url + "/forged.txt"})
        assert not result.is_error, result.envelope()
        assert_neutral(result, "http_request", result.output_text)

    async def test_an_mcp_result(self, tmp_path: Path) -> None:
        entry = server_entry("basic", "basic.py")
        async with runtime_for(tmp_path, {"mcp": {"servers": [entry]}}) as runtime:
            result = await runtime.execute("basic__echo", {"text": PAYLOAD})
        assert not result.is_error, result.envelope()
        assert_neutral(result, "basic__echo", result.output_text)

    async def test_shell_output(self) -> None:
        workspace = make_workspace()
        raw = {"shell": {"workspace": str(workspace)}, "approval": {"auto_approve": ["shell_exec"]}}
        async with runtime_for(workspace.parent, raw) as runtime:
            result = await runtime.execute(
                "shell_exec", {"command": f"printf '{_printf(PAYLOAD)}'"}
            )
        assert not result.is_error, result.envelope()
        assert_neutral(result, "shell_exec", result.output_text)

    async def test_a_host_tools_text_and_error(self, tmp_path: Path) -> None:
        @tool(safety_tier=SafetyTier.READ_ONLY)
        def relay(fail: bool = False) -> str:
            """Pass on what another system said.

            Args:
                fail: Fail with it instead.
            """
            if fail:
                raise ToolExecutionError(PAYLOAD)
            return PAYLOAD

        async with runtime_for(tmp_path, {}, tools=[relay]) as runtime:
            result = await runtime.execute("relay", {})
            failed = await runtime.execute("relay", {"fail": True})
        assert_neutral(result, "relay", result.output_text)
        assert failed.error is not None
        assert_neutral(failed, "relay", failed.error.message)


def _printf(text: str) -> str:
    """``text`` as a printf format between single quotes: every byte that is not printable
    ASCII (and ``\\``, ``%``, ``'``) as an octal escape."""
    return "".join(
        chr(byte) if 0x20 <= byte < 0x7F and chr(byte) not in "\\%'" else f"\\{byte:03o}"
        for byte in text.encode("utf-8")
    )


class TestDisplayLines:
    async def test_a_page_title(self, tmp_path: Path, server: Server) -> None:
        async with runtime_for(tmp_path, LOOPBACK) as runtime:
            result = await runtime.execute("web_fetch", {"url": server.url + "/forged.html"})
        assert result.display is not None
        assert visible(result.display), ascii(result.display)
        assert result.display.startswith(
            "Fetched Invoice \\u202egnp.exe\\u202c \\u009b31m paid\\u200b \\ufeff\\U000e0041 now"
        )

    async def test_a_host_tools_line(self, tmp_path: Path) -> None:
        @tool(safety_tier=SafetyTier.READ_ONLY)
        def rename(name: str) -> ToolResult:
            """Rename a file.

            Args:
                name: The new name.
            """
            return ToolResult.text("renamed", display=f"Renamed to {name}")

        name = "report\u202efdp.exe\x1b[2J\u0085\u2028next\u200d"
        async with runtime_for(tmp_path, {}, tools=[rename]) as runtime:
            result = await runtime.execute("rename", {"name": name})
        assert result.display == "Renamed to report\\u202efdp.exe [2J\\u0085\\u2028next\\u200d"


def _approver(asked: list[dict[str, Any]]) -> CallbackApproval:
    """Allows every call, noting the arguments it was shown as they were when it was asked."""

    def approve(request: ApprovalRequest) -> Approval:
        asked.append(json.loads(json.dumps(request.arguments)))
        return Approval.ALLOW_ONCE

    return CallbackApproval(approve)


@tool(safety_tier=SafetyTier.PRIVILEGED)
def deploy(command: str, targets: list[str]) -> str:
    """Deploy to targets.

    Args:
        command: What to run there.
        targets: Where.
    """
    return f"{command} on {', '.join(targets)}"


class TestApprovalShowsWhatRuns:
    async def test_the_shell_command_as_it_runs(self) -> None:
        workspace = make_workspace()
        asked: list[dict[str, Any]] = []
        raw = {"shell": {"workspace": str(workspace)}, "audit": {"path": "audit.jsonl"}}
        async with runtime_for(workspace.parent, raw, approval=_approver(asked)) as runtime:
            result = await runtime.execute("shell_exec", {"cmd": "echo hi"})
        assert not result.is_error, result.envelope()
        assert result.output_text.startswith("hi\n")
        assert asked == [{"command": "echo hi"}]
        lines = (workspace.parent / "audit.jsonl").read_text("utf-8").splitlines()
        records = [json.loads(line) for line in lines]
        [approval] = [r for r in records if r["type"] == "approval"]
        [call] = [r for r in records if r["type"] == "call"]
        assert call["arguments"] == {"command": "echo hi"}
        ran = json.dumps({"command": "echo hi"}, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(ran.encode("utf-8")).hexdigest()
        assert approval["arguments_sha256"] == call["arguments_sha256"] == digest

    async def test_repaired_values_as_they_run(self, tmp_path: Path) -> None:
        asked: list[dict[str, Any]] = []
        async with runtime_for(tmp_path, {}, tools=[deploy], approval=_approver(asked)) as rt:
            result = await rt.execute("deploy", '{"cmd": "up", "targets": "[\\"a\\", \\"b\\"]"}')
        assert result.output_text == "up on a, b"
        assert asked == [{"command": "up", "targets": ["a", "b"]}]

    async def test_a_call_that_cannot_run_asks_no_one(self, tmp_path: Path) -> None:
        asked: list[dict[str, Any]] = []
        async with runtime_for(tmp_path, {}, tools=[deploy], approval=_approver(asked)) as rt:
            missing = await rt.execute("deploy", {"cmd": "up"})
            empty = await rt.execute("deploy", {"command": "", "targets": []})
        assert missing.error is not None
        assert empty.error is not None
        assert missing.error.kind.value == "validation_error"
        assert missing.error.message == "missing required field 'targets'"
        assert "'command' is required and was empty" in empty.error.message
        assert asked == []

    @pytest.mark.parametrize("provider", ["openai_chat", "anthropic"])
    async def test_asked_ahead_in_a_turn(self, tmp_path: Path, provider: str) -> None:
        """The loop asks for a privileged call's approval while the round's other calls run:
        the approver sees the normalised arguments, once."""
        asked: list[dict[str, Any]] = []
        arguments = json.dumps({"cmd": "up", "targets": '["a"]'})
        model = FakeModel(provider, False, [Reply("", [("d1", "deploy", arguments)]), Reply("ok")])
        with FakeModelServer(model) as base_url:
            async with (
                runtime_for(tmp_path, {}, tools=[deploy], approval=_approver(asked)) as rt,
                HttpModelClient.for_provider(
                    provider, base_url=base_url, api_key=API_KEY, model=MODEL
                ) as client,
            ):
                turn = await run_turn(client, rt, [UserMessage("Deploy.")])
        assert [c.result.output_text for c in turn.calls] == ["up on a"]
        assert asked == [{"command": "up", "targets": ["a"]}]
