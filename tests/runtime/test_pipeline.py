"""Every branch of execute_with_policy, through a real Runtime."""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from toolcage.policies import ToolcageConfig
from toolcage.policies._config import parse_config
from toolcage.runtime import (
    Approval,
    ApprovalRequest,
    Block,
    CallbackApproval,
    FunctionDecl,
    PermissionDeniedError,
    ProgressUpdate,
    Rewrite,
    Runtime,
    SafetyTier,
    TextContent,
    ToolCall,
    ToolEvent,
    ToolExecutionContext,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    ToolResult,
    tool,
)
from toolcage.runtime.abc import Tool

from .sample_tools import echo

pytestmark = pytest.mark.anyio


def config(**sections: Any) -> ToolcageConfig:
    return parse_config(sections, base_dir=__import__("pathlib").Path("."))


class StaticTool:
    """A hand-written Tool: returns what ``produce`` gives it."""

    def __init__(
        self,
        name: str,
        produce: Any,
        *,
        tier: SafetyTier = SafetyTier.SIDE_EFFECTING,
        timeout: float = 5.0,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        self._decl = FunctionDecl(
            name, "A test tool.", parameters or {"type": "object", "properties": {}}
        )
        self.produce = produce
        self.safety_tier = tier
        self.timeout = timeout
        self.seen: list[Mapping[str, Any]] = []

    def schema(self) -> FunctionDecl:
        return self._decl

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        self.seen.append(args)
        value = self.produce(args, ctx)
        if asyncio.iscoroutine(value):
            value = await value
        return value  # type: ignore[no-any-return]


def text_tool(name: str, text: str, **kw: Any) -> StaticTool:
    return StaticTool(name, lambda a, c: ToolResult.text(text), **kw)


class TestLookup:
    async def test_unknown_tool_is_not_found(self) -> None:
        result = await Runtime(tools=[echo]).execute("no_such_tool", {})
        assert result.envelope()["error_type"] == "not_found"
        assert result.envelope()["message"] == "Tool no_such_tool is not available"

    async def test_tool_not_enabled_for_agent_is_not_found(self) -> None:
        runtime = Runtime(tools=[echo, text_tool("other", "x")])
        runtime.registry.enable_only("restricted", ["other"])
        ctx = ToolExecutionContext(agent_id="restricted")
        denied = await runtime.execute("echo", {"text": "hi"}, ctx)
        assert denied.envelope()["error_type"] == "not_found"
        allowed = await runtime.execute("echo", {"text": "hi"})  # the default agent sees all
        assert allowed.envelope() | {"duration_ms": 0} == {
            "status": "success",
            "result": "hi",
            "duration_ms": 0,
        }

    async def test_agents_from_config_restrict_tools(self) -> None:
        cfg = config(agents={"bot": {"tools": ["tool_output_read"]}})
        async with Runtime.from_config(cfg) as runtime:
            assert [d.name for d in runtime.registry.declarations("bot")] == ["tool_output_read"]


class TestArguments:
    async def test_malformed_json_is_a_validation_error(self) -> None:
        result = await Runtime(tools=[echo]).execute("echo", '{"text": "hi"')
        env = result.envelope()
        assert env["error_type"] == "validation_error"
        assert "not valid JSON" in env["message"]

    async def test_json_that_is_not_an_object_is_refused(self) -> None:
        result = await Runtime(tools=[echo]).execute("echo", '["hi"]')
        assert "must be a JSON object, got array" in result.envelope()["message"]

    async def test_json_text_arguments_are_decoded(self) -> None:
        result = await Runtime(tools=[echo]).execute("echo", '{"text": "hi"}')
        assert result.envelope()["result"] == "hi"

    async def test_missing_required_field_is_named(self) -> None:
        env = (await Runtime(tools=[echo]).execute("echo", {})).envelope()
        assert env["error_type"] == "validation_error"
        assert env["message"] == "missing required field 'text'"

    async def test_wrong_type_names_field_expected_and_got(self) -> None:
        env = (await Runtime(tools=[echo]).execute("echo", {"text": 5})).envelope()
        assert env["field"] == "text"
        assert env["message"] == "field 'text' must be a string, got integer 5"

    async def test_unknown_field_lists_the_allowed_ones(self) -> None:
        env = (await Runtime(tools=[echo]).execute("echo", {"text": "a", "txt": "b"})).envelope()
        assert (
            env["message"] == "the arguments object has unknown field 'txt'; allowed fields: text"
        )

    async def test_enum_violation_lists_the_options(self) -> None:
        from .sample_tools import describe

        env = (
            await Runtime(tools=[describe]).execute(
                "describe",
                {"count": 1, "ratio": 0.5, "flag": True, "tags": [], "extra": {}, "colour": "pink"},
            )
        ).envelope()
        assert env["field"] == "colour"
        assert env["message"] == 'field \'colour\' must be one of "red", "blue"; got "pink"'

    async def test_nested_field_path_is_reported(self) -> None:
        from .sample_tools import describe

        env = (
            await Runtime(tools=[describe]).execute(
                "describe",
                {
                    "count": 1,
                    "ratio": 0.5,
                    "flag": True,
                    "tags": ["a", 7],
                    "extra": {},
                    "colour": "red",
                },
            )
        ).envelope()
        assert env["field"] == "tags[1]"
        assert "must be a string, got integer 7" in env["message"]

    async def test_bounds_violation_is_reported(self) -> None:
        limited = StaticTool(
            "limited",
            lambda a, c: ToolResult.text("ok"),
            parameters={
                "type": "object",
                "properties": {"n": {"type": "integer", "minimum": 1}},
            },
        )
        env = (await Runtime(tools=[limited]).execute("limited", {"n": 0})).envelope()
        assert env["field"] == "n"
        assert "0 is less than the minimum of 1" in env["message"]

    async def test_camel_case_names_and_json_strings_are_repaired(self) -> None:
        from .sample_tools import describe

        result = await Runtime(tools=[describe]).execute(
            "describe",
            {
                "count": "3",
                "ratio": "0.5",
                "flag": "true",
                "tags": '["x", "y"]',
                "extra": "{}",
                "colour": "blue",
                "point": '{"x": 1}',
            },
        )
        assert result.details == {
            "count": 3,
            "colour": "blue",
            "mode": "fast",
            "point": {"x": 1, "y": 0},
            "tags": ["x", "y"],
        }

    async def test_camel_case_alias_maps_to_snake_case_parameter(self) -> None:
        seen = StaticTool(
            "spelled",
            lambda a, c: ToolResult.text(str(a["max_results"])),
            parameters={"type": "object", "properties": {"max_results": {"type": "integer"}}},
        )
        result = await Runtime(tools=[seen]).execute("spelled", {"maxResults": 4})
        assert result.output_text == "4"

    async def test_string_that_is_not_json_for_an_array_is_refused(self) -> None:
        from .sample_tools import describe

        env = (
            await Runtime(tools=[describe]).execute(
                "describe",
                {"count": 1, "ratio": 1, "flag": True, "tags": "a,b", "extra": {}, "colour": "red"},
            )
        ).envelope()
        assert env["field"] == "tags"
        assert (
            env["message"]
            == "field 'tags' must be an array, got a string that is not JSON: \"a,b\""
        )

    @pytest.mark.parametrize("as_text", [False, True])
    async def test_ten_megabyte_argument_is_refused_cleanly(self, as_text: bool) -> None:
        big = {"text": "x" * (10 * 1024 * 1024)}
        arguments: Any = __import__("json").dumps(big) if as_text else big
        started = time.perf_counter()
        env = (await Runtime(tools=[echo]).execute("echo", arguments)).envelope()
        assert env["error_type"] == "validation_error"
        assert "over the limit of 1,048,576 bytes" in env["message"]
        assert time.perf_counter() - started < 2


class TestSafetyGate:
    def privileged(self) -> StaticTool:
        return StaticTool(
            "danger",
            lambda a, c: ToolResult.text("done"),
            tier=SafetyTier.PRIVILEGED,
            parameters={"type": "object", "properties": {"what": {"type": "string"}}},
        )

    async def test_privileged_without_approver_is_denied(self) -> None:
        env = (await Runtime(tools=[self.privileged()]).execute("danger", {})).envelope()
        assert env["error_type"] == "permission_denied"
        assert "needs approval" in env["message"]

    async def test_denied_approval_is_permission_denied_and_tool_never_runs(self) -> None:
        tool_ = self.privileged()
        runtime = Runtime(tools=[tool_], approval=CallbackApproval(lambda r: False))
        env = (await runtime.execute("danger", {"what": "x"})).envelope()
        assert env["error_type"] == "permission_denied"
        assert tool_.seen == []

    async def test_approver_sees_the_call(self) -> None:
        requests: list[ApprovalRequest] = []

        async def approve(request: ApprovalRequest) -> Approval:
            requests.append(request)
            return Approval.ALLOW_ONCE

        runtime = Runtime(tools=[self.privileged()], approval=CallbackApproval(approve))
        assert not (await runtime.execute("danger", {"what": "x"})).is_error
        assert not (await runtime.execute("danger", {"what": "x"})).is_error
        assert [(r.tool, dict(r.arguments)) for r in requests] == [("danger", {"what": "x"})] * 2

    async def test_always_allow_is_bound_to_the_arguments(self) -> None:
        asked: list[Mapping[str, Any]] = []

        def approve(request: ApprovalRequest) -> Approval:
            asked.append(request.arguments)
            return Approval.ALLOW_ALWAYS if request.arguments == {"what": "ls"} else Approval.DENY

        runtime = Runtime(tools=[self.privileged()], approval=CallbackApproval(approve))
        assert not (await runtime.execute("danger", {"what": "ls"})).is_error
        assert not (await runtime.execute("danger", '{ "what" :  "ls" }')).is_error
        other = await runtime.execute("danger", {"what": "rm -rf /"})
        assert other.envelope()["error_type"] == "permission_denied"
        assert asked == [{"what": "ls"}, {"what": "rm -rf /"}]

    async def test_operator_auto_approve_skips_the_approver(self) -> None:
        runtime = Runtime(config(approval={"auto_approve": ["danger"]}), tools=[self.privileged()])
        assert (await runtime.execute("danger", {})).output_text == "done"

    async def test_read_only_tools_need_no_approval(self) -> None:
        assert not (await Runtime(tools=[echo]).execute("echo", {"text": "x"})).is_error


class TestHooks:
    async def test_before_hook_blocks_with_its_reason(self) -> None:
        runtime = Runtime(tools=[echo])
        runtime.hooks.before_tool_call(lambda call, ctx: Block("no echoes on Sundays"))
        env = (await runtime.execute("echo", {"text": "hi"})).envelope()
        assert (env["error_type"], env["message"]) == ("blocked", "no echoes on Sundays")

    async def test_before_hook_rewrites_arguments(self) -> None:
        runtime = Runtime(tools=[echo])

        async def shout(call: ToolCall, ctx: ToolExecutionContext) -> Rewrite:
            assert isinstance(call.arguments, Mapping)
            return Rewrite({"text": str(call.arguments["text"]).upper()})

        runtime.hooks.before_tool_call(shout)
        assert (await runtime.execute("echo", {"text": "hi"})).output_text == "HI"

    async def test_rewritten_arguments_are_still_validated(self) -> None:
        runtime = Runtime(tools=[echo])
        runtime.hooks.before_tool_call(lambda call, ctx: Rewrite({"text": 1}))
        env = (await runtime.execute("echo", {"text": "hi"})).envelope()
        assert env["error_type"] == "validation_error"

    async def test_after_and_persist_hooks_and_events_in_order(self) -> None:
        @tool
        def slow_steps(ctx: ToolExecutionContext) -> str:
            """Report progress twice."""
            ctx.progress(ProgressUpdate("half", 0.5))
            ctx.progress(ProgressUpdate("done", 1.0))
            return "secret-token=abc"

        runtime = Runtime(tools=[slow_steps])
        events: list[ToolEvent] = []
        after: list[str] = []
        runtime.hooks.on_event(events.append)
        runtime.hooks.after_tool_call(lambda call, ctx, result: after.append(result.output_text))
        runtime.hooks.tool_result_persist(
            lambda call, ctx, result: ToolResult.text(result.output_text.replace("abc", "***"))
        )
        result = await runtime.execute("slow_steps", {})
        assert result.output_text == "secret-token=***"
        assert after == ["secret-token=abc"]
        kinds = [type(e) for e in events]
        assert kinds == [
            ToolExecutionStart,
            ToolExecutionUpdate,
            ToolExecutionUpdate,
            ToolExecutionEnd,
        ]
        updates = [e.update.fraction for e in events if isinstance(e, ToolExecutionUpdate)]
        assert updates == [0.5, 1.0]
        end = events[-1]
        assert isinstance(end, ToolExecutionEnd)
        assert end.result.output_text == "secret-token=***"
        assert len({e.call.id for e in events}) == 1

    async def test_every_failure_still_emits_start_and_end(self) -> None:
        runtime = Runtime(tools=[echo])
        events: list[ToolEvent] = []
        runtime.hooks.on_event(events.append)
        await runtime.execute("missing", {})
        assert [type(e) for e in events] == [ToolExecutionStart, ToolExecutionEnd]

    async def test_a_failing_listener_does_not_change_the_outcome(self) -> None:
        runtime = Runtime(tools=[echo])

        def broken(event: ToolEvent) -> None:
            raise RuntimeError("listener bug")

        runtime.hooks.on_event(broken)
        assert (await runtime.execute("echo", {"text": "ok"})).output_text == "ok"


class TestSecurityChecks:
    async def test_check_can_rewrite_and_deny(self) -> None:
        class OnlyLowercase:
            def check(
                self, tool: Tool, args: Mapping[str, Any], ctx: ToolExecutionContext
            ) -> Mapping[str, Any]:
                if args.get("text") == "forbidden":
                    raise PermissionDeniedError("text 'forbidden' is not allowed here")
                return {**args, "text": str(args.get("text", "")).lower()}

        runtime = Runtime(tools=[echo], checks=[OnlyLowercase()])
        assert (await runtime.execute("echo", {"text": "ABC"})).output_text == "abc"
        env = (await runtime.execute("echo", {"text": "forbidden"})).envelope()
        assert env["error_type"] == "permission_denied"


class TestTimeouts:
    async def test_async_tool_that_swallows_cancellation_still_times_out_on_time(self) -> None:
        release = anyio.Event()

        async def stubborn(args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
            while not release.is_set():
                # The point of this tool: it swallows every cancellation.
                with contextlib.suppress(BaseException):
                    await anyio.sleep(0.05)
            return ToolResult.text("finally")

        runtime = Runtime(tools=[StaticTool("stubborn", stubborn, timeout=0.2)])
        started = time.perf_counter()
        # The tool runs until ``release``, which only comes after the result: the result
        # arriving at all shows that the call did not wait for the tool.
        result = await runtime.execute("stubborn", {})
        elapsed = time.perf_counter() - started
        release.set()
        assert result.envelope()["error_type"] == "timeout"
        assert result.envelope()["message"] == "Tool stubborn timed out after 0.2 s"
        assert elapsed >= 0.2

    async def test_blocking_sync_tool_times_out_without_blocking_the_loop(self) -> None:
        blocking = threading.Event()
        release = threading.Event()

        @tool(timeout=0.2)
        def sleeper() -> str:
            """Block a worker thread until released (after the call's result)."""
            blocking.set()
            release.wait()
            return "late"

        ticks_while_blocked = 0

        async def ticker() -> None:
            nonlocal ticks_while_blocked
            while True:
                await anyio.sleep(0.01)
                ticks_while_blocked += blocking.is_set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            result = await Runtime(tools=[sleeper]).execute("sleeper", {})
            tg.cancel_scope.cancel()
        release.set()
        assert result.envelope()["error_type"] == "timeout"
        assert ticks_while_blocked > 0  # the loop kept running while the tool blocked its thread

    async def test_config_overrides_the_tool_timeout(self) -> None:
        slow = StaticTool("slow", lambda a, c: anyio.sleep(3600), timeout=3600)
        runtime = Runtime(config(tools={"slow": {"timeout": 0.1}}), tools=[slow])
        envelope = (await runtime.execute("slow", {})).envelope()
        assert envelope["error_type"] == "timeout"
        assert envelope["details"]["timeout"] == 0.1

    async def test_caller_cancellation_propagates_after_a_cancelled_end_event(self) -> None:
        runtime = Runtime(tools=[StaticTool("slow", lambda a, c: anyio.sleep(5))])
        events: list[ToolEvent] = []
        runtime.hooks.on_event(events.append)
        with anyio.move_on_after(0.1) as scope:
            await runtime.execute("slow", {})
        assert scope.cancelled_caught
        end = events[-1]
        assert isinstance(end, ToolExecutionEnd)
        assert end.result.envelope()["error_type"] == "cancelled"


class TestToolTask:
    """Each call's tool runs in a task of its own, so a tool that will not stop can be left
    behind at its deadline; a tool that finishes in its first step is answered in the same
    turn of the event loop, one that waits keeps its deadline and its task."""

    async def test_the_tool_runs_in_a_task_of_its_own(self) -> None:
        tasks: list[asyncio.Task[Any] | None] = []

        def where(args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
            tasks.append(asyncio.current_task())
            return ToolResult.text("here")

        result = await Runtime(tools=[StaticTool("where", where)]).execute("where", {})
        assert result.output_text == "here"
        assert tasks[0] is not None
        assert tasks[0] is not asyncio.current_task()

    async def test_a_tool_that_waits_several_times_gets_its_result(self) -> None:
        async def patient(args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
            for _ in range(3):
                await anyio.lowlevel.checkpoint()
            return ToolResult.text("done")

        result = await Runtime(tools=[StaticTool("patient", patient)]).execute("patient", {})
        assert result.output_text == "done"

    async def test_a_tool_that_waits_inside_a_cancel_scope_and_a_thread_gets_its_result(
        self,
    ) -> None:
        async def scoped(args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
            with anyio.fail_after(30):  # bound to the task it was entered in
                value = await anyio.to_thread.run_sync(lambda: "from a thread")
            return ToolResult.text(value)

        result = await Runtime(tools=[StaticTool("scoped", scoped)]).execute("scoped", {})
        assert result.output_text == "from a thread"

    async def test_a_first_step_that_outlasts_the_deadline_keeps_its_result(self) -> None:
        def hog(args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
            time.sleep(0.2)  # holds the event loop past the deadline, then finishes
            return ToolResult.text("finished")

        runtime = Runtime(tools=[StaticTool("hog", hog, timeout=0.05)])
        assert (await runtime.execute("hog", {})).output_text == "finished"

    async def test_a_waiting_tool_still_times_out(self) -> None:
        release = anyio.Event()

        async def waits(args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
            await release.wait()
            return ToolResult.text("late")

        runtime = Runtime(tools=[StaticTool("waits", waits, timeout=0.05)])
        result = await runtime.execute("waits", {})
        release.set()
        assert result.envelope()["error_type"] == "timeout"


class TestCallIds:
    async def test_calls_made_without_an_id_get_distinct_ids(self) -> None:
        ids: list[str] = []

        def record(args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
            ids.append(ctx.call_id)
            return ToolResult.text("")

        runtime = Runtime(tools=[StaticTool("record", record)])
        for _ in range(3):
            await runtime.execute("record", {})
        await runtime.execute_call(ToolCall("record", {}), ToolExecutionContext())
        await runtime.execute_call(ToolCall("record", {}, "call_mine"), ToolExecutionContext())
        assert all(re.fullmatch(r"call_[0-9a-f]{16}", made) for made in ids[:4]), ids
        assert len(set(ids[:4])) == 4
        assert ids[4] == "call_mine"


class TestFailures:
    async def test_crashing_tool_is_an_execution_error(self) -> None:
        def crash(args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
            raise ZeroDivisionError("division by zero")

        env = (await Runtime(tools=[StaticTool("crash", crash)]).execute("crash", {})).envelope()
        assert env["error_type"] == "execution_error"
        assert env["message"] == "ZeroDivisionError: division by zero"

    async def test_tool_returning_the_wrong_type_is_an_execution_error(self) -> None:
        wrong = StaticTool("wrong", lambda a, c: "not a result")
        env = (await Runtime(tools=[wrong]).execute("wrong", {})).envelope()
        assert env == env | {"error_type": "execution_error"}
        assert "returned str, not a ToolResult" in env["message"]

    async def test_error_result_without_error_becomes_execution_error(self) -> None:
        failing = StaticTool(
            "failing", lambda a, c: ToolResult(content=(TextContent("disk full"),), is_error=True)
        )
        env = (await Runtime(tools=[failing]).execute("failing", {})).envelope()
        assert (env["error_type"], env["message"]) == ("execution_error", "disk full")

    async def test_every_result_has_its_duration(self) -> None:
        result = await Runtime(tools=[StaticTool("nap", nap)]).execute("nap", {})
        assert result.duration >= 0.05
        assert result.envelope()["duration_ms"] >= 50


async def nap(args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
    await anyio.sleep(0.05)
    return ToolResult.text("rested")


class TestTruncation:
    LIMIT = 64

    def runtime(self, text: str) -> Runtime:
        return Runtime(
            config(limits={"truncate_bytes": self.LIMIT}), tools=[text_tool("emit", text)]
        )

    async def test_output_exactly_at_the_limit_is_untouched(self) -> None:
        text = "a" * self.LIMIT
        assert (await self.runtime(text).execute("emit", {})).output_text == text

    async def test_output_one_byte_over_is_truncated_with_marker(self) -> None:
        text = "a" * (self.LIMIT + 1)
        shown = (await self.runtime(text).execute("emit", {})).output_text
        assert shown.startswith("a" * self.LIMIT + "\n[output truncated — original size: 65 bytes]")
        assert "tool_output_read" in shown

    async def test_large_output_reports_size_with_thousands_separator(self) -> None:
        shown = (await self.runtime("z" * 142_857).execute("emit", {})).output_text
        assert "[output truncated — original size: 142,857 bytes]" in shown

    @pytest.mark.parametrize("char", ["é", "€", "😀"])
    @pytest.mark.parametrize("offset", [0, 1, 2, 3])
    async def test_multibyte_characters_are_never_cut(self, char: str, offset: int) -> None:
        text = "a" * offset + char * self.LIMIT
        shown = (await self.runtime(text).execute("emit", {})).output_text
        body = shown.split("\n[output truncated")[0]
        assert text.startswith(body)
        assert len(body.encode()) <= self.LIMIT
        assert len(body.encode()) > self.LIMIT - len(char.encode())

    async def test_full_output_is_readable_page_by_page_in_the_same_session(self) -> None:
        text = "".join(f"line {i} ✓\n" for i in range(50))
        runtime = Runtime(
            config(limits={"truncate_bytes": self.LIMIT}),
            tools=[text_tool("emit", text)],
        )
        runtime.register(
            __import__("toolcage.runtime._output_store", fromlist=["x"]).ToolOutputRead(
                runtime.output_store, page_limit=self.LIMIT
            )
        )
        shown = (await runtime.execute("emit", {})).output_text
        handle = shown.split('handle "')[1].split('"')[0]
        pieces, offset = [], 0
        while True:
            page = await runtime.execute(
                "tool_output_read", {"handle": handle, "offset": offset, "max_bytes": 50}
            )
            assert not page.is_error
            assert len(page.output_text.encode()) <= 50
            pieces.append(page.output_text)
            offset = page.details["next_offset"]
            if page.details["eof"]:
                break
        assert "".join(pieces) == text
        stranger = ToolExecutionContext(session_id="someone-else")
        other = await runtime.execute("tool_output_read", {"handle": handle}, stranger)
        assert other.envelope()["error_type"] == "not_found"
