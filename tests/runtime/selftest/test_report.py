"""The selftest report: its verdict, the exit status the CLI makes of it, its JUnit XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from toolcage.runtime.cli._selftest import exit_status
from toolcage.runtime.selftest import Finding, Report

HELD = Finding("paths", "file_read on /workspace", "path traversal", True)
ALSO_HELD = Finding("ssrf", "web_fetch", "cloud metadata", True)
ESCAPED = Finding(
    "ssrf",
    "http_request",
    "cloud metadata",
    False,
    "egress.private_exceptions.0 opens 169.254.169.254",
    "http://169.254.169.254/ connected to 169.254.169.254",
)
NOT_RUN = "shell: shell_exec `echo` failed (bwrap is not installed)"


def report(*findings: Finding, not_run: tuple[str, ...] = ()) -> Report:
    return Report(findings=list(findings), not_run=list(not_run), seconds=1.5)


class TestVerdict:
    def test_everything_held_passes(self) -> None:
        done = report(HELD, ALSO_HELD)
        assert (done.held, done.passed, exit_status(done)) == (True, True, 0)
        assert done.text().splitlines()[-1] == "every attack held (2 attacks, 1.5 s)"

    def test_an_escape_fails(self) -> None:
        done = report(HELD, ESCAPED)
        assert (done.held, done.passed, exit_status(done)) == (False, False, 1)
        assert "ESCAPED  ssrf" in done.text()
        assert f"  ssrf: {ESCAPED.key}\n" in done.text()
        assert done.text().splitlines()[-1] == "1 attack escaped (2 attacks, 1.5 s)"

    def test_escapes_through_one_key_are_one_entry_with_their_count(self) -> None:
        done = report(ESCAPED, ESCAPED, ESCAPED)
        assert f"  ssrf: {ESCAPED.key} (3 attacks)" in done.text()
        assert done.text().count(ESCAPED.detail) == 1

    def test_a_class_not_run_fails_apart_from_an_escape(self) -> None:
        done = report(HELD, not_run=(NOT_RUN,))
        assert (done.held, done.passed, exit_status(done)) == (True, False, 3)
        assert f"NOT RUN  {NOT_RUN}" in done.text()
        assert exit_status(report(ESCAPED, not_run=(NOT_RUN,))) == 1

    def test_nothing_attacked_is_said(self) -> None:
        done = Report(skipped=['shell: shell.mode = "disabled": there is no shell to attack'])
        assert exit_status(done) == 0
        assert done.text().splitlines()[-1].startswith("nothing attacked")

    def test_the_json(self) -> None:
        data = json.loads(report(HELD, ESCAPED, not_run=(NOT_RUN,)).to_json())
        assert (data["passed"], data["held"], data["attacks"]) == (False, False, 2)
        assert data["summary"] == {
            "paths": {"held": 1, "escaped": 0},
            "ssrf": {"held": 0, "escaped": 1},
        }
        assert data["escapes"][0]["key"] == ESCAPED.key
        assert data["not_run"] == [NOT_RUN]


class TestJunit:
    def parse(self, done: Report) -> dict[str, ET.Element]:
        root = ET.fromstring(done.to_junit())  # noqa: S314 (our own output)
        assert (root.tag, root.get("name")) == ("testsuites", "toolcage selftest")
        return {s.get("name", ""): s for s in root.findall("testsuite")}

    def test_a_suite_per_class_a_case_per_target_and_payload(self) -> None:
        suites = self.parse(report(HELD, ALSO_HELD, ESCAPED, ESCAPED))
        assert set(suites) == {"selftest.paths", "selftest.ssrf"}
        ssrf = suites["selftest.ssrf"]
        cases = ssrf.findall("testcase")
        assert [c.get("name") for c in cases] == [
            "web_fetch: cloud metadata",
            "http_request: cloud metadata",  # two escapes, one case
        ]
        assert (ssrf.get("tests"), ssrf.get("failures"), ssrf.get("errors")) == ("2", "1", "0")
        [failure] = ssrf.iter("failure")
        assert failure.get("message") == ESCAPED.key
        assert (failure.text or "").count(ESCAPED.detail) == 2
        assert all(c.get("classname") == "selftest.ssrf" for c in cases)
        assert suites["selftest.paths"].get("failures") == "0"

    def test_a_class_not_run_is_an_error(self) -> None:
        suites = self.parse(report(HELD, not_run=(NOT_RUN,)))
        shell = suites["selftest.shell"]
        assert (shell.get("tests"), shell.get("errors"), shell.get("failures")) == ("1", "1", "0")
        [case] = shell.findall("testcase")
        [error] = case.findall("error")
        assert (
            error.get("message")
            == "could not run: shell_exec `echo` failed (bwrap is not installed)"
        )

    def test_a_class_cut_short_is_an_error_in_its_own_suite(self) -> None:
        cut = "paths: cut short by the time budget (--budget 5 s)"
        suites = self.parse(report(HELD, not_run=(cut,)))
        assert set(suites) == {"selftest.paths"}  # one suite, not a second of the same name
        paths = suites["selftest.paths"]
        assert (paths.get("tests"), paths.get("errors"), paths.get("failures")) == ("2", "1", "0")
        [error] = paths.iter("error")
        assert error.get("message") == "could not run: cut short by the time budget (--budget 5 s)"
