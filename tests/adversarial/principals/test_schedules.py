"""A schedule runs as exactly the principal that created it, never wider.

Schedules are made through the doors hosts use -- ``Runtime.execute``, a delegated turn of
``run_turn``, ``toolcage mcp --agent`` driven by the MCP client SDK -- and fired by the
scheduler service on a manual clock through ``ScheduledTurns`` and a scripted model on
127.0.0.1, with the schedules in an embedded SQLite file and on a libSQL server.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from toolcage.host_bindings._backends._libsql_client import BoundedClient
from toolcage.host_bindings._scheduler import (
    ManualClock,
    RunRecord,
    RunStatus,
    Schedule,
    ScheduleFilter,
    Scheduler,
    ScheduleStore,
    open_schedule_store,
)
from toolcage.host_bindings._scheduler._tables import MIGRATIONS
from toolcage.runtime import (
    HttpModelClient,
    Principal,
    Runtime,
    SessionKind,
    SessionLink,
    ToolExecutionContext,
    UserMessage,
    run_turn,
    tool,
)
from toolcage.runtime._channel import JsonLinesChannel
from toolcage.runtime.agent._scheduled_turns import ScheduledTurns

from ...host_bindings.store.libsql_server import LibsqlServer
from ...runtime.cli.test_cli import COMMAND
from ...runtime.fake_llm import API_KEY, MODEL, FakeModel, FakeModelServer, Reply
from ._cast import ADA, ADA_REVIEWER, AGENTS_TOML, BOB_REVIEWER, REVIEWER_TOOLS, context

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]

TOKEN = "schedules-token"  # noqa: S105 -- the test server's own token
HOURLY = {"goal": "Check in", "cadence_type": "cron", "cadence_value": "0 * * * *"}
PLANNER_TOML = """
[agents.planner]
tools = ["schedule_create", "delegate_to_agent", "whoami"]
description = "plans and schedules"
"""
"""A delegate that runs as a branch (the default kind) and may schedule and delegate."""


@tool
async def whoami(ctx: ToolExecutionContext) -> str:
    """Say whose call this is."""
    ran_for.append(ctx.principal)
    return ctx.agent_id


ran_for: list[Principal] = []
"""The principals ``whoami`` ran for."""


@dataclass
class Rig:
    """A directory with a config, a state store (one backend), a scripted model and the
    channel notifications go to."""

    root: Path
    server: LibsqlServer | None
    model: FakeModel
    client: HttpModelClient
    lines: io.StringIO = field(default_factory=io.StringIO)

    def config(self, agents: str = AGENTS_TOML) -> Path:
        """Write the config: the store, the scheduler's budget and the profiles ``agents``."""
        state = (
            ""
            if self.server is None
            else f'[state]\nurl = "{self.server.url}"\nauth_token = "{TOKEN}"\n'
        )
        path = self.root / "toolcage.toml"
        path.write_text(f"{state}[scheduler]\nmax_turns = 4\n{agents}")
        return path

    @asynccontextmanager
    async def runtime(self, agents: str = AGENTS_TOML) -> AsyncIterator[Runtime]:
        """``Runtime.from_config`` of :meth:`config`, with ``whoami``, the channel and the
        model (so ``delegate_to_agent`` exists)."""
        config = self.config(agents)
        channel = JsonLinesChannel(self.lines)
        models = {"default": self.client}
        async with Runtime.from_config(
            config, tools=[whoami], channel=channel, models=models
        ) as runtime:
            yield runtime

    @contextmanager
    def store(self, runtime: Runtime) -> Iterator[ScheduleStore]:
        url = runtime.config.state.store_url(runtime.config.base_dir)
        opened = open_schedule_store(url, base_dir=runtime.config.base_dir, auth_token=TOKEN)
        try:
            yield opened
        finally:
            opened.close()

    async def fire(self, runtime: Runtime) -> list[RunRecord]:
        """Fire what is due two hours from now (a manual clock); the runs."""
        with self.store(runtime) as store:
            clock = ManualClock(datetime.now(UTC) + timedelta(hours=2))
            turns = ScheduledTurns(runtime, self.client)
            channel = JsonLinesChannel(self.lines)
            scheduler = Scheduler(store, turns, channel=channel, clock=clock)
            fired = await scheduler.fire_due()
            runs = [store.get_run(run_id) for run_id in fired]
        return [run for run in runs if run is not None]

    def schedules(self, runtime: Runtime, user: str = "ada") -> list[Schedule]:
        with self.store(runtime) as store:
            found, _ = store.search_schedules(user, ScheduleFilter(), limit=50, offset=0)
        return found

    def notifications(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines.getvalue().splitlines()]

    def offered(self, request: int) -> set[str]:
        """The tools the model was offered in its ``request``-th request."""
        body = self.model.requests[request].body
        return {entry["function"]["name"] for entry in body.get("tools", ())}

    def tool_answer(self, request: int, call_id: str) -> str:
        """What the model was told a call ``call_id`` returned, in its ``request``-th request."""
        for message in self.model.requests[request].body["messages"]:
            if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
                return str(message["content"])
        raise AssertionError(f"no answer to {call_id} in request {request}")

    def sql(self, *statements: tuple[str, tuple[Any, ...]]) -> None:
        """Run ``statements`` on the store's database itself, past toolcage."""
        if self.server is None:
            path = self.root / ".toolcage" / "state.db"
            path.parent.mkdir(parents=True, exist_ok=True)
            connection = apsw.Connection(str(path))
            try:
                for sql, args in statements:
                    connection.execute(sql, args)
            finally:
                connection.close()
            return
        client = BoundedClient(self.server.url, auth_token=TOKEN, timeout=30.0)
        try:
            client.batch(statements)
        finally:
            client.close()


@pytest.fixture(params=["embedded", "libsql"])
async def rig(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Rig]:
    (tmp_path / "workspace").mkdir()
    server = (
        LibsqlServer(tmp_path / "remote.db", token=TOKEN) if request.param == "libsql" else None
    )
    model = FakeModel("openai_chat", False, [])
    ran_for.clear()
    try:
        with FakeModelServer(model) as base_url:
            client = HttpModelClient.for_provider(
                "openai_chat", base_url=base_url, api_key=API_KEY, model=MODEL
            )
            async with client:
                yield Rig(tmp_path, server, model, client)
    finally:
        if server is not None:
            server.close()


async def create(runtime: Runtime, ctx: ToolExecutionContext, **overrides: Any) -> dict[str, Any]:
    """``schedule_create`` as ``ctx``, hourly, notifying always; its answer."""
    arguments = {**HOURLY, "notification": "always", **overrides}
    result = await runtime.execute("schedule_create", arguments, ctx)
    assert not result.is_error, result.envelope()
    answer: dict[str, Any] = json.loads(result.output_text)
    return answer


def fired_as(schedule_id: str, principal: Principal) -> Principal:
    return principal.in_session(f"schedule:{schedule_id}")


def failed_kind(answer: str) -> str:
    """The ``error_type`` of a tool's answer as the model read it."""
    return str(json.loads(answer)["error_type"])


class TestTheFiredTurnIsTheCreatorsPrincipal:
    async def test_a_restricted_agents_schedule_runs_with_only_its_tools(self, rig: Rig) -> None:
        async with rig.runtime() as runtime:
            made = await create(runtime, ADA_REVIEWER)
            rig.model.script[:] = [Reply(calls=[("c1", "whoami", "{}")]), Reply("checked")]
            (run,) = await rig.fire(runtime)
        assert run.status is RunStatus.SUCCEEDED, run.summary
        # The model was offered the reviewer's tools and nothing else; the one it was not
        # given is not_found, and never ran.
        assert rig.offered(0) == set(REVIEWER_TOOLS)
        assert failed_kind(rig.tool_answer(1, "c1")) == "not_found"
        assert ran_for == []
        (stored,) = rig.schedules(runtime)
        assert stored.schedule_id == made["schedule_id"]
        assert stored.principal == ADA_REVIEWER.principal
        assert stored.agent_profile is True

    async def test_an_unrestricted_agents_schedule_runs_as_that_agent(self, rig: Rig) -> None:
        async with rig.runtime() as runtime:
            made = await create(runtime, ADA)
            rig.model.script[:] = [Reply(calls=[("c1", "whoami", "{}")]), Reply("checked")]
            (run,) = await rig.fire(runtime)
        assert run.status is RunStatus.SUCCEEDED, run.summary
        assert ran_for == [fired_as(made["schedule_id"], ADA.principal)]
        (stored,) = rig.schedules(runtime)
        assert stored.agent_profile is False  # "lead" has no [agents.lead]: every tool

    async def test_a_branch_delegates_schedule_keeps_its_kind_depth_and_chain(
        self, rig: Rig
    ) -> None:
        async with rig.runtime(AGENTS_TOML + PLANNER_TOML) as runtime:
            delegate = json.dumps({"agent": "planner", "goal": "schedule a check-in"})
            rig.model.script[:] = [
                Reply(calls=[("h1", "delegate_to_agent", delegate)]),  # ada's own turn
                Reply(calls=[("p1", "schedule_create", json.dumps(HOURLY))]),  # the planner's
                Reply("scheduled"),
                Reply("the planner scheduled it"),
            ]
            turn = await run_turn(rig.client, runtime, [UserMessage("plan")], context=ADA)
            assert turn.text == "the planner scheduled it"
            (stored,) = rig.schedules(runtime)
            branch = Principal(
                "ada",
                "planner",
                "s1/planner",
                SessionKind.BRANCH,
                "chat",
                (SessionLink("lead", "s1", "chat"),),
                1,
            )
            assert stored.principal == branch
            onward = json.dumps({"agent": "reviewer", "goal": "look again"})
            rig.model.script[4:] = [
                Reply(calls=[("f1", "whoami", "{}"), ("f2", "delegate_to_agent", onward)]),
                Reply("done"),
            ]
            (run,) = await rig.fire(runtime)
        assert run.status is RunStatus.SUCCEEDED, run.summary
        assert ran_for == [fired_as(stored.schedule_id, branch)]
        # A depth-1 turn is at [delegation] max_depth = 1: it cannot delegate further.
        refused = rig.tool_answer(5, "f2")
        assert failed_kind(refused) == "permission_denied", refused
        assert "delegation depth limit" in refused
        # A branch sends on its parent's channel: so does its schedule.
        assert [n["channel_id"] for n in rig.notifications()] == ["chat"]

    async def test_a_schedule_made_through_toolcage_mcp_keeps_the_agent(self, rig: Rig) -> None:
        config = rig.config()
        params = StdioServerParameters(
            command=COMMAND[0],
            args=[*COMMAND[1:], "mcp", "--config", str(config), "--agent", "reviewer"],
            cwd=rig.root,
            env=dict(os.environ),
        )
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            made = await session.call_tool("schedule_create", {**HOURLY})
        assert isinstance(made, types.CallToolResult)
        assert not made.is_error, made.content
        async with rig.runtime() as runtime:
            rig.model.script[:] = [Reply(calls=[("c1", "whoami", "{}")]), Reply("checked")]
            (run,) = await rig.fire(runtime)
            (stored,) = rig.schedules(runtime, "local")
        assert run.status is RunStatus.SUCCEEDED, run.summary
        assert stored.principal is not None
        assert (stored.principal.agent_id, stored.principal.session_id[:4]) == ("reviewer", "mcp-")
        assert rig.offered(0) == set(REVIEWER_TOOLS)
        assert failed_kind(rig.tool_answer(1, "c1")) == "not_found"
        assert ran_for == []


WITHOUT_SCHEDULE_CREATE = f"""
[agents.reviewer]
tools = {[name for name in REVIEWER_TOOLS if name != "schedule_create"]!r}
session = "worker"
"""


class TestAScheduleThatLostItsAuthorityFails:
    @pytest.mark.parametrize(
        ("agents", "says"),
        [
            ("", "no longer has it ([agents.reviewer])"),
            (WITHOUT_SCHEDULE_CREATE, "no longer has schedule_create among its [agents.reviewer]"),
        ],
        ids=["profile-removed", "schedule-create-removed"],
    )
    async def test_the_run_fails_naming_the_agent_and_notifies_the_owner(
        self, rig: Rig, agents: str, says: str
    ) -> None:
        async with rig.runtime() as runtime:
            made = await create(runtime, ADA_REVIEWER, notification="conditional")
        async with rig.runtime(agents) as runtime:
            (run,) = await rig.fire(runtime)
        assert run.status is RunStatus.FAILED
        assert "agent 'reviewer'" in run.summary
        assert says in run.summary
        assert rig.model.requests == []  # no turn ran, as no one
        (note,) = rig.notifications()
        assert (note["user_id"], note["channel_id"], note["data"]["status"]) == (
            "ada",
            "chat",
            "failed",
        )
        assert note["data"]["schedule_id"] == made["schedule_id"]

    async def test_an_agent_that_never_had_a_profile_still_runs(self, rig: Rig) -> None:
        async with rig.runtime() as runtime:
            made = await create(runtime, context("ada", "helper"))
        async with rig.runtime("") as runtime:
            rig.model.script[:] = [Reply(calls=[("c1", "whoami", "{}")]), Reply("checked")]
            (run,) = await rig.fire(runtime)
        assert run.status is RunStatus.SUCCEEDED, run.summary
        assert ran_for == [fired_as(made["schedule_id"], context("ada", "helper").principal)]


class TestNoArgumentSetsThePrincipal:
    async def test_schedule_edit_cannot_change_it(self, rig: Rig) -> None:
        async with rig.runtime() as runtime:
            made = await create(runtime, ADA_REVIEWER)
            schedule_id = made["schedule_id"]
            for forged in ({"agent_id": "lead"}, {"principal": ADA.principal.to_record()}):
                result = await runtime.execute(
                    "schedule_edit", {"schedule_id": schedule_id, **forged}, ADA
                )
                assert result.error is not None
                assert result.error.kind.value == "validation_error", result.envelope()
            forged_create = await runtime.execute(
                "schedule_create", {**HOURLY, "agent_id": "lead"}, ADA_REVIEWER
            )
            assert forged_create.error is not None
            assert forged_create.error.kind.value == "validation_error"
            # Another user cannot see it; its owner's other agent sees it but cannot change
            # it, since the goal runs with the reviewer's tools.
            stranger = await runtime.execute(
                "schedule_edit", {"schedule_id": schedule_id, "goal": "x"}, BOB_REVIEWER
            )
            assert stranger.error is not None
            assert stranger.error.kind.value == "not_found"
            for tool, args in (("schedule_edit", {"goal": "Check again"}), ("schedule_delete", {})):
                other_agent = await runtime.execute(tool, {"schedule_id": schedule_id, **args}, ADA)
                assert other_agent.error is not None
                assert other_agent.error.kind.value == "permission_denied", other_agent.envelope()
                assert "agent 'reviewer'" in other_agent.error.message
            rig.model.script[:] = [Reply(calls=[("c1", "whoami", "{}")]), Reply("checked")]
            (run,) = await rig.fire(runtime)
            (stored,) = rig.schedules(runtime)
        assert run.status is RunStatus.SUCCEEDED, run.summary
        assert stored.principal == ADA_REVIEWER.principal
        assert rig.model.requests[0].body["messages"][-1]["content"] == stored.goal
        assert stored.goal != "Check again"
        assert rig.offered(0) == set(REVIEWER_TOOLS)
        assert ran_for == []

    async def test_another_agent_of_the_same_user_cannot_rewrite_its_goal(self, rig: Rig) -> None:
        async with rig.runtime() as runtime:
            made = await create(runtime, ADA)
            rewrite = {"schedule_id": made["schedule_id"], "goal": "Delete everything"}
            refused = await runtime.execute("schedule_edit", rewrite, context("ada", "ops"))
            assert refused.error is not None
            assert refused.error.kind.value == "permission_denied"
            own = await runtime.execute("schedule_edit", {**rewrite, "goal": "Check twice"}, ADA)
            assert not own.is_error, own.envelope()
            (stored,) = rig.schedules(runtime)
        assert stored.goal == "Check twice"


OLD_ROW = (
    "INSERT INTO schedules (schedule_id, user_id, name, goal, cadence_type, cadence_value,"
    " timezone, notification, status, channel_id, next_run_us, created_us, updated_us,"
    " last_run_us) VALUES (?, 'ada', 'old', 'Check in', 'cron', '0 * * * *', 'UTC', 'always',"
    " 'active', 'chat-7', ?, ?, ?, NULL)"
)


class TestStoredPrincipals:
    async def test_schedules_of_an_old_database_keep_running_as_default_main_depth_0(
        self, rig: Rig
    ) -> None:
        now_us = int(datetime.now(UTC).timestamp() * 1_000_000)
        rig.sql(
            ("CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)", ()),
            *((statement, ()) for statement in MIGRATIONS[0]),
            ("INSERT INTO store_meta VALUES ('scheduler_schema_version', '1')", ()),
            (OLD_ROW, ("sched-old", now_us + 60_000_000, now_us, now_us)),
        )
        async with rig.runtime() as runtime:
            rig.model.script[:] = [Reply(calls=[("c1", "whoami", "{}")]), Reply("checked")]
            (run,) = await rig.fire(runtime)
            (stored,) = rig.schedules(runtime)
        old = Principal("ada", "default", "schedule:sched-old", SessionKind.MAIN, "chat-7")
        assert (stored.principal, stored.agent_profile) == (old, False)
        assert run.status is RunStatus.SUCCEEDED, run.summary
        assert ran_for == [old]

    async def test_a_record_that_is_not_its_owners_principal_fails_only_its_run(
        self, rig: Rig
    ) -> None:
        async with rig.runtime() as runtime:
            tampered = await create(runtime, ADA_REVIEWER)
            await create(runtime, ADA, goal="The other one")
            bob = json.dumps(context("bob").principal.to_record())
            rig.sql(
                (
                    "UPDATE schedules SET principal = ? WHERE schedule_id = ?",
                    (bob, tampered["schedule_id"]),
                )
            )
            rig.model.script[:] = [Reply("fine")]
            runs = await rig.fire(runtime)
        by_schedule = {run.schedule_id: run for run in runs}
        refused = by_schedule.pop(tampered["schedule_id"])
        assert refused.status is RunStatus.FAILED
        assert "principal cannot be read" in refused.summary
        assert [run.status for run in by_schedule.values()] == [RunStatus.SUCCEEDED]
        assert ran_for == []
