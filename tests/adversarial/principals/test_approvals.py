"""An approver's "always" covers only the principal it was given for.

The safety gate remembers ALLOW_ALWAYS by the ``[approval] remember`` scope of the caller
(its user and agent by default), the tool and the canonical arguments: another user, agent
or session makes the same call and the approver is asked again.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from toolcage.policies import ConfigError
from toolcage.runtime import (
    Approval,
    ApprovalRequest,
    CallbackApproval,
    Runtime,
    SafetyTier,
    ToolCall,
    ToolExecutionContext,
    tool,
)

from ._cast import ADA, BOB, config_with_agents, context

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]


@tool(safety_tier=SafetyTier.PRIVILEGED)
def deploy(target: str) -> str:
    """Deploy a target."""
    return f"deployed {target}"


class Approver:
    """Says "always" to everything and records who asked."""

    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Approval:
        self.asked.append(request)
        return Approval.ALLOW_ALWAYS

    def who(self) -> list[tuple[str, str, str]]:
        return [(r.context.user_id, r.context.agent_id, r.context.session_id) for r in self.asked]


async def run_as(runtime: Runtime, *contexts: ToolExecutionContext) -> None:
    for ctx in contexts:
        result = await runtime.execute("deploy", {"target": "prod"}, ctx)
        assert not result.is_error, result.envelope()


def runtime_in(tmp_path: Path, approver: Approver, body: str = "") -> Runtime:
    config = config_with_agents(tmp_path, body)
    return Runtime.from_config(config, tools=[deploy], approval=CallbackApproval(approver))


class TestAlwaysIsPerPrincipal:
    async def test_one_users_always_never_runs_another_users_call_unasked(
        self, tmp_path: Path
    ) -> None:
        approver = Approver()
        async with runtime_in(tmp_path, approver) as runtime:
            await run_as(runtime, ADA, ADA, BOB, BOB)
        assert approver.who() == [("ada", "lead", "s1"), ("bob", "lead", "s1")]

    async def test_another_agent_of_the_same_user_is_asked_again(self, tmp_path: Path) -> None:
        approver = Approver()
        async with runtime_in(tmp_path, approver) as runtime:
            await run_as(runtime, ADA, ADA, context("ada", "ops"), context("ada", "ops"))
        assert approver.who() == [("ada", "lead", "s1"), ("ada", "ops", "s1")]

    async def test_the_same_user_and_agent_in_another_session_is_covered(
        self, tmp_path: Path
    ) -> None:
        approver = Approver()
        async with runtime_in(tmp_path, approver) as runtime:
            await run_as(runtime, ADA, context("ada", session="s2"))
        assert approver.who() == [("ada", "lead", "s1")]

    async def test_the_request_says_whose_calls_always_covers(self, tmp_path: Path) -> None:
        approver = Approver()
        async with runtime_in(tmp_path, approver) as runtime:
            await run_as(runtime, ADA)
        (request,) = approver.asked
        assert request.always_covers == "user 'ada' and agent 'lead', in any session"

    async def test_users_that_differ_only_in_how_their_ids_split_stay_apart(
        self, tmp_path: Path
    ) -> None:
        approver = Approver()
        async with runtime_in(tmp_path, approver) as runtime:
            await run_as(runtime, context("a", "b/c"), context("a/b", "c"))
        assert len(approver.asked) == 2


class TestWiderScopesAreTheOperatorsChoice:
    @pytest.mark.parametrize(
        ("remember", "asked"),
        [
            ("session", 4),
            ("user_agent", 3),
            ("user", 2),
            ("runtime", 1),
        ],
    )
    async def test_each_scope_covers_what_it_names(
        self, tmp_path: Path, remember: str, asked: int
    ) -> None:
        approver = Approver()
        body = f'[approval]\nremember = "{remember}"\n'
        async with runtime_in(tmp_path, approver, body) as runtime:
            await run_as(
                runtime,
                ADA,
                context("ada", session="s2"),  # same user and agent, another session
                context("ada", "ops"),  # same user, another agent
                BOB,  # another user
            )
        assert len(approver.asked) == asked
        assert approver.asked[0].always_covers

    async def test_an_unknown_scope_is_a_config_error_naming_the_key(self, tmp_path: Path) -> None:
        config = config_with_agents(tmp_path, '[approval]\nremember = "everyone"\n')
        with pytest.raises(ConfigError, match=r"approval\.remember"):
            Runtime.from_config(config, tools=[deploy])


class TestDecidedAheadIsPerPrincipal:
    async def test_an_answer_asked_ahead_is_used_only_by_its_own_principal(
        self, tmp_path: Path
    ) -> None:
        answers = iter([Approval.ALLOW_ONCE, Approval.DENY])
        asked: list[str] = []

        def approver(request: ApprovalRequest) -> Approval:
            asked.append(request.context.user_id)
            return next(answers)

        async with Runtime.from_config(
            config_with_agents(tmp_path), tools=[deploy], approval=CallbackApproval(approver)
        ) as runtime:
            tool_ = runtime.registry.get("deploy")
            ada = ADA.for_call("call_1", ADA.progress)
            bob = BOB.for_call("call_1", BOB.progress)  # the same call id, another user
            await runtime.gate.decide_ahead("deploy", tool_, {"target": "prod"}, ada)
            call = ToolCall("deploy", {"target": "prod"}, "call_1")
            denied = await runtime.execute_call(call, bob)
        assert denied.error is not None
        assert denied.error.kind.value == "permission_denied"
        assert asked == ["ada", "bob"]
