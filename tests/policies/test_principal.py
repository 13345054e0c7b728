"""The principal: ids checked once, kinds closed, records read back, file names safe."""

from __future__ import annotations

import re

import pytest
from toolcage.policies import (
    Principal,
    PrincipalError,
    SessionKind,
    SessionLink,
    path_segment,
)
from toolcage.runtime import ToolExecutionContext


class TestIdsAreChecked:
    @pytest.mark.parametrize(
        ("field", "value", "says"),
        [
            ("user_id", "", "user_id: is empty"),
            ("agent_id", "", "agent_id: is empty"),
            ("session_id", "x" * 257, "session_id: is 257 characters long; the limit is 256"),
            ("user_id", "ada\nbob", "user_id: holds U+000A"),
            ("user_id", "ada\x00", "user_id: holds U+0000"),
            ("channel_id", "c\u202e", "channel_id: holds U+202E"),
            ("user_id", 7, "user_id: must be a string, got int"),
        ],
    )
    def test_a_bad_id_names_its_field_and_the_rule(
        self, field: str, value: object, says: str
    ) -> None:
        with pytest.raises(PrincipalError, match="^" + re.escape(says)) as caught:
            Principal(**{field: value})  # type: ignore[arg-type]
        assert caught.value.field == field

    def test_a_huge_id_is_quoted_only_in_part(self) -> None:
        with pytest.raises(PrincipalError) as caught:
            Principal(user_id="A" * 1_000_000)
        assert len(str(caught.value)) < 200
        assert "1,000,000" in str(caught.value)

    @pytest.mark.parametrize(
        "value",
        [
            "../../etc/passwd",
            "/abs/path",
            "'; DROP TABLE notes; --",
            'x" OR user_id != "',
            "NEAR(a b) OR c*",
            '"quoted" AND -not',
            "日本語のユーザー",
            "%2e%2e",
        ],
    )
    def test_text_shaped_like_paths_sql_or_search_is_an_ordinary_id(self, value: str) -> None:
        assert Principal(user_id=value).user_id == value

    def test_an_unknown_session_kind_is_refused(self) -> None:
        with pytest.raises(PrincipalError, match="session_kind: must be one of main"):
            Principal(session_kind="root")  # type: ignore[arg-type]

    def test_the_context_checks_the_parts_it_is_built_from(self) -> None:
        with pytest.raises(PrincipalError, match="user_id: is empty"):
            ToolExecutionContext(user_id="")


class TestTheContextCarriesOnePrincipal:
    def test_parts_and_principal_build_the_same_value(self) -> None:
        built = ToolExecutionContext(user_id="ada", agent_id="lead", session_id="s1")
        assert built.principal == Principal("ada", "lead", "s1")
        assert ToolExecutionContext(principal=built.principal).principal is built.principal

    def test_a_call_and_a_child_keep_or_extend_it(self) -> None:
        ctx = ToolExecutionContext(user_id="ada", agent_id="lead", channel_id="chat")
        assert ctx.for_call("c1", ctx.progress).principal is ctx.principal
        child = ctx.child(SessionKind.BRANCH, agent_id="helper", session_id="s/helper")
        assert child.principal.user_id == "ada"
        assert child.principal.delegation_depth == 1
        assert child.principal.parents == (SessionLink("lead", "default", "chat"),)
        assert child.principal.chain == ("lead", "helper")


class TestRecords:
    def test_a_record_reads_back_as_the_same_principal(self) -> None:
        principal = Principal(
            "ada",
            "helper",
            "s1/helper",
            SessionKind.BRANCH,
            "chat",
            (SessionLink("lead", "s1", "chat"),),
            1,
        )
        assert Principal.from_record(principal.to_record()) == principal

    @pytest.mark.parametrize(
        "record",
        [
            {},
            {"user_id": "ada", "agent_id": "a", "session_id": "s", "session_kind": "root"},
            {"user_id": "", "agent_id": "a", "session_id": "s", "session_kind": "main"},
            {
                "user_id": "a",
                "agent_id": "a",
                "session_id": "s",
                "session_kind": "main",
                "parents": [["x"]],
            },
        ],
    )
    def test_a_damaged_record_is_a_principal_error(self, record: dict[str, object]) -> None:
        with pytest.raises(PrincipalError):
            Principal.from_record(record)


class TestPathSegments:
    @pytest.mark.parametrize(
        ("value", "segment"),
        [
            ("ada", "ada"),
            ("Ada_01-x", "Ada_01-x"),
            (".", "%2E"),
            ("..", "%2E%2E"),
            ("a/b", "a%2Fb"),
            ("%2F", "%252F"),
            ("é", "%C3%A9"),
        ],
    )
    def test_every_other_character_is_escaped(self, value: str, segment: str) -> None:
        assert path_segment(value) == segment

    def test_distinct_ids_never_share_a_segment(self) -> None:
        ids = ["a/b", "a%2Fb", "a_b", "A/b", "x" * 300, "x" * 299 + "y", "."]
        segments = [path_segment(i) for i in ids]
        assert len(set(segments)) == len(ids)
        assert all(len(s) <= 96 and "/" not in s and s not in (".", "..") for s in segments)
