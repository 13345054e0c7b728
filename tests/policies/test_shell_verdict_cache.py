"""A shell policy remembers its verdicts per command text, refusals included."""

from __future__ import annotations

import pytest
from toolcage.policies import ShellConfig, ShellPolicy, ShellPolicyViolation
from toolcage.policies.shell._policy import CACHED_VERDICTS


@pytest.fixture
def policy() -> ShellPolicy:
    return ShellPolicy.from_config(ShellConfig())


class TestVerdictCache:
    def test_an_allowed_text_is_decided_once(self, policy: ShellPolicy) -> None:
        first = policy.check("git status && ls -la | wc -l")
        assert policy.check("git status && ls -la | wc -l") is first
        assert first.programs == ("git", "ls", "wc")

    def test_a_refused_text_is_refused_again_with_a_fresh_error(self, policy: ShellPolicy) -> None:
        errors = []
        for _ in range(2):
            with pytest.raises(ShellPolicyViolation) as caught:
                policy.check("git -c core.pager=./x log")
            errors.append(caught.value)
        assert errors[0] is not errors[1]
        assert str(errors[0]) == str(errors[1])
        assert (errors[0].part, errors[0].reason) == (errors[1].part, errors[1].reason)

    def test_the_memory_is_bounded_and_forgetting_changes_no_verdict(
        self, policy: ShellPolicy
    ) -> None:
        with pytest.raises(ShellPolicyViolation):
            policy.check("curl http://127.0.0.1/")
        for i in range(CACHED_VERDICTS + 10):
            policy.check(f"echo {i}")
        assert len(policy._verdicts) == CACHED_VERDICTS
        with pytest.raises(ShellPolicyViolation):
            policy.check("curl http://127.0.0.1/")

    def test_the_settings_it_decided_under_cannot_change(self, policy: ShellPolicy) -> None:
        with pytest.raises(AttributeError):
            policy.allowed = frozenset({"rm"})  # type: ignore[misc]
