"""The audit log, through Runtime.from_config and execute: one record per call and per
approval decision, secrets redacted, a failing sink that neither blocks nor fails calls."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from toolcage.runtime import (
    Approval,
    Block,
    CallbackApproval,
    Runtime,
    SafetyTier,
    ToolExecutionContext,
    ToolExecutionStart,
    tool,
)
from toolcage.runtime.observe import AuditLog
from toolcage.runtime.observe._log import CLOSE_TIMEOUT
from toolcage.wasm_tools.build import build_cached

from ...host_bindings.servers import serving
from ..wasm.guest_tools import add_guest

pytestmark = pytest.mark.anyio

HOG = Path(__file__).parents[1] / "wasm" / "guests" / "hog.c"
SPIN = Path(__file__).parents[1] / "wasm" / "guests" / "spin.c"
MOUNTS = (
    '[[mounts.areas]]\nhost = "workspace"\nguest = "/workspace"\ncreate = true\n'
    'tiers = { read_only = "ro", side_effecting = "rw" }\n'
)
SECRETS = (
    "sekrit-bearer-0123456789",
    "sk-live0123456789abcdefghij",
    "hunter2-password",
    "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
    "AKIAABCDEFGHIJKLMNOP",
    "xoxb-1234567890-abcdefghij",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    "cookie-value-42",
    "url-password-77",
)


@tool(safety_tier=SafetyTier.READ_ONLY)
def echo(text: str, extra: dict[str, Any] | None = None) -> str:
    """Give the text back.

    Args:
        text: Any text.
        extra: Anything.
    """
    return text


@tool(safety_tier=SafetyTier.PRIVILEGED)
def launch(target: str) -> str:
    """Launch something.

    Args:
        target: What to launch.
    """
    return f"launched {target}"


@tool(safety_tier=SafetyTier.READ_ONLY)
def broken() -> str:
    """Always fail."""
    raise RuntimeError("out of order")


@tool(safety_tier=SafetyTier.READ_ONLY, timeout=0.2)
async def sleepy() -> str:
    """Sleep past the timeout."""
    await anyio.sleep(3600)
    return "woke"


STARTED = threading.Event()


@tool(safety_tier=SafetyTier.READ_ONLY)
async def waiter() -> str:
    """Wait until cancelled."""
    STARTED.set()
    await anyio.sleep(3600)
    return "done"


HOST_TOOLS = [echo, launch, broken, sleepy, waiter]


def write_config(root: Path, text: str = "", *, audit: str = 'path = "audit.jsonl"') -> Path:
    (root / "workspace").mkdir(exist_ok=True)
    config = root / "toolcage.toml"
    config.write_text(f"{MOUNTS}\n[audit]\n{audit}\n{text}")
    return config


def records(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def calls(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [record for record in found if record["type"] == "call"]


async def until(condition: Callable[[], bool]) -> None:
    """Poll (the test's own timeout bounds the wait)."""
    while not condition():  # noqa: ASYNC110 - another thread's or the file's state
        await anyio.sleep(0.01)


@asynccontextmanager
async def runtime_at(config: Path, **kwargs: Any) -> AsyncIterator[Runtime]:
    async with Runtime.from_config(config, tools=HOST_TOOLS, **kwargs) as runtime:
        yield runtime


class TestOneRecordPerCall:
    async def test_every_kind_of_call_and_refusal(self, tmp_path: Path) -> None:
        config = write_config(
            tmp_path,
            '[approval]\nauto_approve = ["shell_exec"]\n[shell]\nworkspace = "workspace"\n',
        )
        hog = build_cached([HOG])[0].read_bytes()
        expected: dict[str, tuple[str, str | None]] = {}
        context = ToolExecutionContext(user_id="ada", session_id="s1", agent_id="default")
        denier = CallbackApproval(lambda request: Approval.DENY)
        async with runtime_at(config, approval=denier) as runtime:
            add_guest(runtime, "hog", hog, memory_bytes=2 << 20)
            runtime.hooks.before_tool_call(
                lambda call, ctx: (
                    Block("not today")
                    if call.name == "echo" and call.arguments == {"text": "blocked"}
                    else None
                )
            )

            async def run(name: str, arguments: Any, status: str, error: str | None) -> None:
                result = await runtime.execute(name, arguments, context)
                envelope = result.envelope()
                assert envelope["status"] == status, envelope
                assert envelope.get("error_type") == error, envelope
                assert result.error is None or error == result.error.kind.value
                expected[f"{name}:{json.dumps(arguments, sort_keys=True)}"] = (status, error)

            await run("echo", {"text": "hi"}, "success", None)
            await run("no_such_tool", {}, "error", "not_found")
            await run("echo", {"text": 5}, "error", "validation_error")
            await run("echo", "{not json", "error", "validation_error")
            await run("file_read", {"path": "/etc/passwd"}, "error", "permission_denied")
            await run("launch", {"target": "x"}, "error", "permission_denied")
            await run("shell_exec", {"command": "curl http://x"}, "error", "permission_denied")
            await run("http_request", {"url": "http://127.0.0.1:9/"}, "error", "permission_denied")
            await run("echo", {"text": "blocked"}, "error", "blocked")
            await run("sleepy", {}, "error", "timeout")
            await run("broken", {}, "error", "execution_error")
            await run("hog", {}, "error", "execution_error")
            STARTED.clear()
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(runtime.execute, "waiter", {}, context)
                    await until(STARTED.is_set)
                    scope.cancel()
        found = records(tmp_path / "audit.jsonl")
        call_records = calls(found)
        assert len(call_records) == len(expected) + 1
        assert len({record["call_id"] for record in call_records}) == len(call_records)
        by_tool = {record["tool"]: record for record in call_records}
        assert by_tool["waiter"]["error_type"] == "cancelled"
        assert by_tool["hog"]["error_type"] == "execution_error"
        for record in call_records:
            assert record["user_id"] == "ada"
            assert record["session_id"] == "s1"
            assert record["agent_id"] == "default"
            assert record["channel_id"] is None
            assert record["time"].endswith("Z")
            assert record["duration_ms"] >= 0
            assert len(record["arguments_sha256"]) == 64
            assert isinstance(record["result_bytes"], int)
            assert record["result_bytes"] > 0
        statuses = sorted((r["status"], r["error_type"]) for r in call_records)
        assert statuses == sorted([*expected.values(), ("error", "cancelled")])

    async def test_each_policy_decision_is_recorded_with_its_reason(self, tmp_path: Path) -> None:
        config = write_config(
            tmp_path,
            '[approval]\nauto_approve = ["shell_exec"]\n[shell]\nworkspace = "workspace"\n',
        )
        async with runtime_at(config) as runtime:
            await runtime.execute("file_read", {"path": "/etc/passwd"})
            await runtime.execute("file_list", {"path": "/workspace"})
            await runtime.execute("shell_exec", {"command": "curl http://x"})
            await runtime.execute("http_request", {"url": "http://127.0.0.1:9/"})
        by_tool = {r["tool"]: r["decisions"] for r in calls(records(tmp_path / "audit.jsonl"))}
        [path_denied] = by_tool["file_read"]
        assert path_denied["policy"] == "path"
        assert not path_denied["allowed"]
        assert "outside the mounts" in path_denied["reason"]
        assert by_tool["file_list"] == [{"policy": "path", "allowed": True, "reason": "allowed"}]
        approval, shell = by_tool["shell_exec"]
        assert approval == {
            "policy": "approval",
            "allowed": True,
            "reason": "approval.auto_approve names the tool",
        }
        assert shell["policy"] == "shell"
        assert not shell["allowed"]
        assert "curl" in shell["reason"]
        assert by_tool["http_request"] == [
            {
                "policy": "egress",
                "allowed": False,
                "reason": "127.0.0.1 is loopback; private destinations are blocked",
            }
        ]

    async def test_the_egress_verdict_of_a_request_that_went_out(self, tmp_path: Path) -> None:
        config = write_config(tmp_path, '[egress]\nprivate_exceptions = ["127.0.0.1"]\n')
        with serving() as server:
            async with runtime_at(config) as runtime:
                result = await runtime.execute("http_request", {"url": server.url + "/ok"})
                assert not result.is_error, result.envelope()
        [record] = calls(records(tmp_path / "audit.jsonl"))
        assert record["decisions"] == [
            {"policy": "egress", "allowed": True, "reason": f"GET http://127.0.0.1:{server.port}"}
        ]


class TestApprovalRecords:
    async def test_each_decision_has_its_own_record(self, tmp_path: Path) -> None:
        config = write_config(tmp_path)
        answers = iter([Approval.DENY, Approval.ALLOW_ALWAYS, Approval.ALLOW_ONCE])
        approver = CallbackApproval(lambda request: next(answers))
        async with runtime_at(config, approval=approver) as runtime:
            await runtime.execute("launch", {"target": "a"})
            await runtime.execute("launch", {"target": "b"})
            await runtime.execute("launch", {"target": "b"})  # the standing allowance
            await runtime.execute("launch", {"target": "c"})
            await runtime.execute("echo", {"text": "no approval needed"})
        found = records(tmp_path / "audit.jsonl")
        approvals = [r for r in found if r["type"] == "approval"]
        assert [(r["allowed"], r["reason"]) for r in approvals] == [
            (False, "The user did not approve this call of launch"),
            (True, "approved, and remembered for these arguments"),
            (True, "a standing allowance for these arguments"),
            (True, "approved once"),
        ]
        launches = [r for r in calls(found) if r["tool"] == "launch"]
        assert [a["call_id"] for a in approvals] == [c["call_id"] for c in launches]
        assert [c["status"] for c in launches] == ["error", "success", "success", "success"]
        assert all(r["tier"] == "privileged" for r in approvals)


class TestRedaction:
    async def test_no_secret_reaches_the_file(self, tmp_path: Path) -> None:
        config = write_config(
            tmp_path,
            '[egress]\nprivate_exceptions = ["127.0.0.1"]\n[approval]\n'
            'auto_approve = ["shell_exec"]\n[shell]\nworkspace = "workspace"\n',
            audit=(
                'path = "audit.jsonl"\nredact_keys = ["x-tenant"]\n'
                'redact_patterns = ["tenant-[0-9]+"]'
            ),
        )
        body = json.dumps({"api_key": SECRETS[1], "query": "weather", "nested": {"Cookie": "a"}})
        text = (
            f"Authorization: Bearer {SECRETS[0]}\npassword={SECRETS[2]}&page=2\n"
            f"token {SECRETS[3]} and {SECRETS[4]} and {SECRETS[5]} and {SECRETS[6]}\n"
            f"-----BEGIN PRIVATE KEY-----\n{SECRETS[7]}\n-----END PRIVATE KEY-----\n"
            f"https://user:{SECRETS[9]}@example.com/ tenant-123456"
        )
        with serving() as server:
            async with runtime_at(config) as runtime:
                result = await runtime.execute(
                    "http_request",
                    {
                        "url": server.url + "/echo",
                        "method": "POST",
                        "headers": {"Authorization": f"Bearer {SECRETS[0]}", "X-Tenant": "t9"},
                        "body": body,
                    },
                )
                assert not result.is_error, result.envelope()
                await runtime.execute(
                    "echo",
                    {
                        "text": text,
                        "extra": {
                            "Set-Cookie": SECRETS[8],
                            "headers": [["Authorization", f"Bearer {SECRETS[0]}"]],
                            "json": json.dumps({"client_secret": SECRETS[2]}),
                        },
                    },
                )
                refused = await runtime.execute(
                    "shell_exec", {"command": f"echo $(printf {SECRETS[1]})"}
                )
                # the refusal quotes the command; its envelope is redacted as the record is
                assert "Shell policy refused '$(printf [REDACTED])'" in refused.output_text
        raw = (tmp_path / "audit.jsonl").read_text(encoding="utf-8")
        for secret in (*SECRETS, "tenant-123456", "t9"):
            assert secret not in raw
        http, echoed, shell = calls(records(tmp_path / "audit.jsonl"))
        assert shell["decisions"][-1]["reason"].startswith("Shell policy refused '$(printf ")
        assert http["arguments"]["headers"] == {
            "Authorization": "[REDACTED]",
            "X-Tenant": "[REDACTED]",
        }
        assert json.loads(http["arguments"]["body"]) == {
            "api_key": "[REDACTED]",
            "query": "weather",
            "nested": {"Cookie": "[REDACTED]"},
        }
        assert echoed["arguments"]["text"].startswith("Authorization: [REDACTED]\n")
        assert "page=2" in echoed["arguments"]["text"]

    async def test_the_hash_matches_the_full_arguments(self, tmp_path: Path) -> None:
        arguments = {"text": f"Bearer {SECRETS[0]}", "extra": {"b": 1, "a": [True, None]}}
        async with runtime_at(write_config(tmp_path)) as runtime:
            await runtime.execute("echo", arguments)
        [record] = calls(records(tmp_path / "audit.jsonl"))
        canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"))
        assert record["arguments_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()
        assert record["arguments"]["text"] == "[REDACTED]"

    async def test_long_values_are_cut(self, tmp_path: Path) -> None:
        config = write_config(tmp_path, audit='path = "audit.jsonl"\nmax_value_chars = 100')
        async with runtime_at(config) as runtime:
            await runtime.execute("echo", {"text": "x" * 5000})
        [record] = calls(records(tmp_path / "audit.jsonl"))
        assert record["arguments"]["text"] == "x" * 100 + "…[4900 more characters]"


class TestFailingSink:
    async def test_a_file_that_cannot_be_written_comes_back(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        config = write_config(tmp_path, audit='path = "audit.jsonl"\nretry_seconds = 0.02')
        log = tmp_path / "audit.jsonl"
        log.mkdir()  # where the file should be: every write fails
        caplog.set_level(logging.WARNING, logger="toolcage.audit")
        async with runtime_at(config) as runtime:
            for number in range(5):
                result = await runtime.execute("echo", {"text": str(number)})
                assert not result.is_error
            await until(lambda: any("the sink failed" in r.message for r in caplog.records))
            log.rmdir()
            await until(lambda: log.is_file() and len(records(log)) == 5)
            await runtime.execute("echo", {"text": "after"})
        assert [r["arguments"]["text"] for r in records(log)] == ["0", "1", "2", "3", "4", "after"]
        failures = [r for r in caplog.records if "the sink failed" in r.message]
        assert len(failures) == 1
        assert failures[0].name == "toolcage.audit"
        assert getattr(failures[0], "event", None) == "audit.sink_failed"
        assert getattr(failures[0], "error", "").startswith("IsADirectoryError: ")
        recovered = [r for r in caplog.records if "works again" in r.message]
        assert [getattr(r, "event", None) for r in recovered] == ["audit.sink_recovered"]

    async def test_a_handler_that_raises_then_recovers(self, tmp_path: Path) -> None:
        config = write_config(tmp_path, audit="retry_seconds = 0.02")
        got: list[dict[str, Any]] = []
        failures = [3]

        def handler(record: dict[str, Any]) -> None:
            if failures[0]:
                failures[0] -= 1
                raise ConnectionError("collector down")
            got.append(record)

        async with runtime_at(config, audit=handler) as runtime:
            for number in range(4):
                assert not (await runtime.execute("echo", {"text": str(number)})).is_error
            await until(lambda: len(got) == 4)
        assert [r["arguments"]["text"] for r in got] == ["0", "1", "2", "3"]
        assert not (tmp_path / "audit.jsonl").exists()  # the handler replaces the file

    async def test_a_handler_that_hangs_blocks_no_call(self, tmp_path: Path) -> None:
        config = write_config(tmp_path, audit="retry_seconds = 0.02")
        release = threading.Event()
        got: list[dict[str, Any]] = []

        def handler(record: dict[str, Any]) -> None:
            release.wait()
            got.append(record)

        async with runtime_at(config, audit=handler) as runtime:
            for number in range(20):
                assert not (await runtime.execute("echo", {"text": str(number)})).is_error
            assert got == []
            release.set()
            await until(lambda: len(got) == 20)

    async def test_a_handler_that_never_returns_does_not_hold_the_close(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        config = write_config(tmp_path)
        release = threading.Event()
        entered = threading.Event()

        def handler(record: dict[str, Any]) -> None:
            entered.set()
            release.wait()

        caplog.set_level(logging.WARNING, logger="toolcage.audit")
        try:
            runtime = Runtime.from_config(config, tools=HOST_TOOLS, audit=handler)
            observation = runtime.pipeline.observation
            assert observation is not None
            [log] = [o for o in observation.observers if isinstance(o, AuditLog)]
            assert log.close_timeout == CLOSE_TIMEOUT
            log.close_timeout = 0.05  # the wait's length is not what this test is about
            async with runtime:
                assert not (await runtime.execute("echo", {"text": "x"})).is_error
                await until(entered.is_set)
            [writer] = [t for t in threading.enumerate() if t.name == "toolcage-audit"]
            assert writer.daemon  # left behind, it holds up no exit
            [left] = [r for r in caplog.records if "did not finish" in r.message]
            assert getattr(left, "event", None) == "audit.close_timed_out"
        finally:
            release.set()
        await until(lambda: not [t for t in threading.enumerate() if t.name == "toolcage-audit"])

    async def test_overflow_is_counted_and_reported_on_recovery(self, tmp_path: Path) -> None:
        config = write_config(tmp_path, audit="retry_seconds = 0.02\nmax_pending = 5")
        healthy = threading.Event()
        got: list[dict[str, Any]] = []

        def handler(record: dict[str, Any]) -> None:
            if not healthy.is_set():
                raise OSError("disk full")
            got.append(record)

        async with runtime_at(config, audit=handler) as runtime:
            for number in range(30):
                assert not (await runtime.execute("echo", {"text": str(number)})).is_error
            healthy.set()
            await until(lambda: any(r["type"] == "dropped" for r in got))
        kept = calls(got)
        [dropped] = [r for r in got if r["type"] == "dropped"]
        assert 0 < len(kept) <= 5
        assert len(kept) + dropped["count"] == 30
        assert [r["arguments"]["text"] for r in kept] == [str(n) for n in range(len(kept))]


class TestFile:
    async def test_rotation_by_size(self, tmp_path: Path) -> None:
        config = write_config(tmp_path, audit='path = "audit.jsonl"\nrotate_bytes = 2000\nkeep = 2')
        async with runtime_at(config) as runtime:
            for number in range(40):
                await runtime.execute("echo", {"text": f"call {number}"})
                await anyio.lowlevel.checkpoint()
        log = tmp_path / "audit.jsonl"
        files = sorted(p.name for p in tmp_path.glob("audit.jsonl*"))  # noqa: ASYNC240 (closed)
        assert files == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2", "audit.jsonl.lock"]
        texts = [
            r["arguments"]["text"] for p in (f"{log}.2", f"{log}.1", log) for r in records(Path(p))
        ]
        assert texts == [f"call {n}" for n in range(40 - len(texts), 40)]
        for name in files:
            found = os.stat(tmp_path / name)
            assert stat.S_IMODE(found.st_mode) == 0o600
            assert found.st_size <= 2000

    async def test_a_call_the_close_stopped_is_recorded(self, tmp_path: Path) -> None:
        spin = build_cached([SPIN])[0].read_bytes()
        started = anyio.Event()
        results: list[dict[str, Any]] = []
        runtime = Runtime.from_config(write_config(tmp_path), tools=HOST_TOOLS)
        add_guest(runtime, "spin", spin, timeout=3600)
        runtime.hooks.on_event(
            lambda event: started.set() if isinstance(event, ToolExecutionStart) else None
        )

        async def spinning() -> None:
            results.append((await runtime.execute("spin", {})).envelope())

        async with anyio.create_task_group() as group:
            group.start_soon(spinning)
            await started.wait()
            await runtime.aclose()
        assert results[0]["error_type"] == "cancelled"
        [record] = calls(records(tmp_path / "audit.jsonl"))
        assert (record["tool"], record["error_type"]) == ("spin", "cancelled")

    async def test_a_missing_directory_is_made_owner_only(self, tmp_path: Path) -> None:
        async with runtime_at(write_config(tmp_path, audit='path = "logs/audit.jsonl"')) as runtime:
            await runtime.execute("echo", {"text": "x"})
        assert len(records(tmp_path / "logs" / "audit.jsonl")) == 1
        assert stat.S_IMODE(os.stat(tmp_path / "logs").st_mode) == 0o700

    async def test_closing_writes_everything_and_leaves_no_thread(self, tmp_path: Path) -> None:
        async with runtime_at(write_config(tmp_path)) as runtime:
            for number in range(200):
                await runtime.execute("echo", {"text": str(number)})
        assert len(records(tmp_path / "audit.jsonl")) == 200
        assert not [t for t in threading.enumerate() if t.name == "toolcage-audit"]

    async def test_no_audit_section_writes_nothing_and_starts_no_thread(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "workspace").mkdir()
        (tmp_path / "toolcage.toml").write_text(MOUNTS)
        async with Runtime.from_config(tmp_path / "toolcage.toml", tools=HOST_TOOLS) as runtime:
            assert runtime.pipeline.observation is None
            await runtime.execute("echo", {"text": "x"})
            assert not [t for t in threading.enumerate() if t.name == "toolcage-audit"]


async def test_a_bad_redaction_pattern_is_a_config_error(tmp_path: Path) -> None:
    from toolcage.policies import ConfigError

    config = write_config(tmp_path, audit='path = "a.jsonl"\nredact_patterns = ["(unclosed"]')
    with pytest.raises(ConfigError, match=r"audit\.redact_patterns: '\(unclosed' is not"):
        Runtime.from_config(config)
