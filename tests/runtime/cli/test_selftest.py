"""``toolcage selftest`` through the command line: it holds on the configs that hold, and
names the class and key of each deliberately weakened config in ``weakened/``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from ...test_readme import blocks

COMMAND = [sys.executable, "-m", "toolcage.runtime", "selftest"]
WEAKENED = Path(__file__).parent / "weakened"


def selftest(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def as_nobody_helper(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    helper = Path(__file__).parents[2] / "cli_as_nobody.py"
    return subprocess.run(
        [sys.executable, str(helper), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(done.stdout)
    return data


class TestConfigsThatHold:
    def test_the_embedded_default(self, tmp_path: Path) -> None:
        done = selftest("--json", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        data = report(done)
        assert data["held"] is True
        classes = {"paths", "races", "ssrf", "shell", "principals"}  # no secrets
        assert set(data["summary"]) == classes
        assert all(v["held"] > 0 for v in data["summary"].values())
        assert done.stderr == ""  # no progress off a terminal
        assert not (tmp_path / "workspace").exists()  # the operator's world is untouched

    @pytest.mark.skipif(os.geteuid() != 0, reason="the drop to uid 65534 needs root")
    def test_as_an_unprivileged_user_it_holds_as_it_does_as_root(self, tmp_path: Path) -> None:
        # The shell class is left out: its sidecar is this interpreter, which uid 65534
        # may not be able to run (its files sit under root's home here).
        args = ["--", "selftest", "--json", "--only", "paths,races,ssrf,secrets,principals"]
        modules = str(tmp_path / "modules.json")
        home = tempfile.mkdtemp(prefix="toolcage-nobody-")  # tmp_path is root's only
        os.chown(home, 65534, 65534)
        try:
            as_root = as_nobody_helper("record", modules, *args, cwd=tmp_path)
            as_nobody = as_nobody_helper("drop", modules, home, *args, cwd=tmp_path)
        finally:
            shutil.rmtree(home)
        for done in (as_root, as_nobody):
            assert done.returncode == 0, done.stdout + done.stderr
        held = report(as_nobody)
        assert held["summary"] == report(as_root)["summary"]
        assert (held["held"], held["not_run"]) == (True, [])
        assert set(held["summary"]) == {"paths", "races", "ssrf", "principals"}

    @pytest.mark.parametrize("number", range(len(blocks("toml"))))
    def test_the_readme_examples(self, number: int, tmp_path: Path) -> None:
        (tmp_path / "toolcage.toml").write_text(blocks("toml")[number])
        done = selftest("--config", "toolcage.toml", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.splitlines()[-1].startswith("every attack held")


WEAKENED_CASES = [
    ("mount_of_root.toml", "paths", "mounts.areas.0.host = '/' holds"),
    ("interpreter_allowed.toml", "shell", "shell.extra_allow.0: `python3`"),
    ("metadata_exception.toml", "ssrf", "egress.private_exceptions.1 opens 169.254.169.254"),
    ("metadata_exception.toml", "ssrf", "egress.private_exceptions.0 opens 127.0.0.0/8"),
    ("secret_on_shared_hosting.toml", "secrets", "secrets.pages.hosts.0: '*.github.io'"),
    ("shared_shell_workspace.toml", "principals", "shell.workspace = 'team-shell' lacks {user}"),
]


class TestWeakenedConfigs:
    @pytest.mark.parametrize(("name", "attack", "key"), WEAKENED_CASES)
    def test_reported_by_class_and_key(
        self, name: str, attack: str, key: str, tmp_path: Path
    ) -> None:
        config = tmp_path / name
        config.write_text((WEAKENED / name).read_text())
        done = selftest("--config", name, "--json", "--only", attack, cwd=tmp_path)
        assert done.returncode == 1, done.stdout + done.stderr
        data = report(done)
        assert data["held"] is False
        escapes = data["escapes"]
        assert {e["attack"] for e in escapes} == {attack}
        assert any(e["key"].startswith(key) for e in escapes), escapes

    def test_the_junit_report(self, tmp_path: Path) -> None:
        (tmp_path / "weak.toml").write_text((WEAKENED / "metadata_exception.toml").read_text())
        junit = tmp_path / "selftest.xml"
        done = selftest("--config", "weak.toml", "--junit", str(junit), cwd=tmp_path)
        assert done.returncode == 1, done.stderr
        root = ET.parse(junit).getroot()  # noqa: S314 (our own output)
        assert root.tag == "testsuites"
        suites = {s.get("name"): s for s in root.iter("testsuite")}
        classes = ("paths", "races", "ssrf", "shell", "principals")
        assert set(suites) == {f"selftest.{c}" for c in classes}
        for suite in suites.values():
            cases = suite.findall("testcase")
            assert int(suite.get("tests", "-1")) == len(cases) > 0
            failed = [c for c in cases if c.find("failure") is not None]
            assert int(suite.get("failures", "-1")) == len(failed)
            assert all(c.get("classname") and c.get("name") for c in cases)
        failures = list(suites["selftest.ssrf"].iter("failure"))
        assert failures
        assert any("private_exceptions.1" in (f.get("message") or "") for f in failures)
        assert not list(suites["selftest.paths"].iter("failure"))


PER_USER = (
    (WEAKENED / "shared_shell_workspace.toml")
    .read_text()
    .replace('workspace = "team-shell"', 'workspace = "users/{user}/workspace"')
)
"""The weakened config made whole: the shell workspace is each user's /workspace."""


class TestPrincipals:
    """Two users of each agent profile (the restricted ``reviewer`` too) through execute."""

    def test_per_user_files_state_and_shell_hold(self, tmp_path: Path) -> None:
        (tmp_path / "t.toml").write_text(PER_USER)
        done = selftest("--config", "t.toml", "--json", "--only", "principals", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        # default: notes, scratchpad, schedules, /workspace, /shared, the shell workspace;
        # reviewer: the same but the shell, which it may not call
        assert report(done)["summary"] == {"principals": {"held": 11, "escaped": 0}}
        assert not (tmp_path / "users").exists()  # the scratch copy, not the operator's

    def test_a_shared_workspace_without_user_elsewhere_is_not_reported(
        self, tmp_path: Path
    ) -> None:
        """One directory for everyone is the operator's choice when nothing names {user}."""
        (tmp_path / "t.toml").write_text('[shell]\nworkspace = "team-shell"\n')
        done = selftest("--config", "t.toml", "--json", "--only", "principals", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert report(done)["summary"] == {"principals": {"held": 3, "escaped": 0}}


class TestControls:
    """A class runs one harmless call first; a runtime that fails it never passes as held."""

    def test_a_disabled_shell_is_skipped_not_held(self, tmp_path: Path) -> None:
        (tmp_path / "t.toml").write_text('[shell]\nmode = "disabled"\n')
        done = selftest("--config", "t.toml", "--json", "--only", "shell,paths", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        data = report(done)
        assert set(data["summary"]) == {"paths"}
        assert data["skipped"] == ['shell: shell.mode = "disabled": there is no shell to attack']
        assert data["not_run"] == []

    def test_a_shell_that_cannot_start_could_not_run(self, tmp_path: Path) -> None:
        """Without bubblewrap every shell attack would be refused: not run, not held."""
        (tmp_path / "bin").mkdir()
        env = {**os.environ, "PATH": str(tmp_path / "bin")}
        junit = tmp_path / "selftest.xml"
        args = ("--only", "shell,paths", "--junit", str(junit))
        done = selftest(*args, cwd=tmp_path, env=env)
        assert done.returncode == 3, done.stdout + done.stderr
        assert "NOT RUN  shell: shell_exec `echo` failed" in done.stdout
        assert "bwrap" in done.stdout
        assert done.stdout.splitlines()[-1].startswith("1 class could not run")
        root = ET.parse(junit).getroot()  # noqa: S314 (our own output)
        [shell] = [s for s in root.iter("testsuite") if s.get("name") == "selftest.shell"]
        assert shell.get("errors") == "1"
        [error] = shell.iter("error")
        assert (error.get("message") or "").startswith("could not run: shell_exec")

    def test_a_class_not_run_fails_the_json_report(self, tmp_path: Path) -> None:
        (tmp_path / "bin").mkdir()
        env = {**os.environ, "PATH": str(tmp_path / "bin")}
        done = selftest("--only", "shell", "--json", cwd=tmp_path, env=env)
        assert done.returncode == 3, done.stdout + done.stderr
        data = report(done)
        assert (data["passed"], data["held"]) == (False, True)
        [line] = data["not_run"]
        assert line.startswith("shell: ")


class TestBudget:
    """A class the time budget left no room for, or cut short, did not hold: it did not run."""

    def test_a_class_out_of_time_is_not_run(self, tmp_path: Path) -> None:
        junit = tmp_path / "out.xml"
        args = ("--only", "paths,shell", "--budget", "0.001", "--json", "--junit", str(junit))
        done = selftest(*args, cwd=tmp_path)
        assert done.returncode == 3, done.stdout + done.stderr
        data = report(done)
        assert (data["passed"], data["held"]) == (False, True)
        # loading the config and starting the runtime alone take longer than a millisecond
        assert [line.split(":")[0] for line in data["not_run"]] == ["paths", "shell"]
        assert all("--budget 0.001" in line for line in data["not_run"]), data["not_run"]
        root = ET.parse(junit).getroot()  # noqa: S314 (our own output)
        errors = [e.get("message") or "" for e in root.iter("error")]
        assert len(errors) == 2
        assert all(e.startswith("could not run: ") and "--budget" in e for e in errors)

    def test_the_text_report_says_so(self, tmp_path: Path) -> None:
        done = selftest("--only", "paths", "--budget", "0.001", cwd=tmp_path)
        assert done.returncode == 3, done.stdout + done.stderr
        assert "NOT RUN  paths: " in done.stdout
        assert done.stdout.splitlines()[-1].startswith("1 class could not run")


class TestUsage:
    def test_an_unknown_class(self, tmp_path: Path) -> None:
        done = selftest("--only", "paths,dns", cwd=tmp_path)
        assert done.returncode == 2
        assert "unknown class dns" in done.stderr

    def test_a_broken_config_is_named(self, tmp_path: Path) -> None:
        (tmp_path / "bad.toml").write_text('[secrets.x]\nfrom_env = "X"\nhosts = ["*"]\n')
        done = selftest("--config", "bad.toml", cwd=tmp_path)
        assert done.returncode == 2
        assert "secrets.x.hosts" in done.stderr
        assert "Traceback" not in done.stderr


def junit_cases(path: Path) -> dict[str, bool]:
    """Each JUnit test case's ``classname: name``, and whether it passed."""
    root = ET.parse(path).getroot()  # noqa: S314 (our own output)
    return {
        f"{case.get('classname')}: {case.get('name')}": case.find("failure") is None
        for case in root.iter("testcase")
    }


REDIRECT_CLASSES = (
    "redirect to loopback, another port",
    "redirect to a private address",
    "redirect to cloud metadata",
    "redirect to another scheme",
)


class TestRedirects:
    def test_the_default_holds_every_redirect(self, tmp_path: Path) -> None:
        junit = tmp_path / "out.xml"
        done = selftest("--only", "ssrf", "--json", "--junit", str(junit), cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert report(done)["skipped"] == []  # the redirector was reached: the hops were judged
        cases = junit_cases(junit)
        for tool in ("http_request", "web_fetch"):
            for payload in REDIRECT_CLASSES:
                assert cases[f"selftest.ssrf: {tool}: {payload}"] is True

    @pytest.mark.parametrize(
        ("name", "payload", "key"),
        [
            (
                "private_range_exception.toml",
                "redirect to a private address",
                "egress.private_exceptions.0 opens 10.0.0.0/8 (10.0.0.1)",
            ),
            (
                "metadata_exception.toml",
                "redirect to cloud metadata",
                "egress.private_exceptions.1 opens 169.254.169.254",
            ),
            (
                "metadata_exception.toml",
                "redirect to loopback, another port",
                "egress.private_exceptions.0 opens 127.0.0.0/8",
            ),
        ],
    )
    def test_a_hop_into_an_exception_escapes(
        self, name: str, payload: str, key: str, tmp_path: Path
    ) -> None:
        (tmp_path / name).write_text((WEAKENED / name).read_text())
        done = selftest("--config", name, "--json", "--only", "ssrf", cwd=tmp_path)
        assert done.returncode == 1, done.stdout + done.stderr
        escapes = [e for e in report(done)["escapes"] if e["payload"] == payload]
        assert {e["target"] for e in escapes} == {"http_request", "web_fetch"}
        assert all(e["key"].startswith(key) for e in escapes), escapes
        assert all("connected to" in e["detail"] for e in escapes)

    def test_an_unreachable_redirector_is_skipped_not_held(self, tmp_path: Path) -> None:
        (tmp_path / "only.toml").write_text('[egress]\nallow_hosts = ["example.com"]\n')
        done = selftest("--config", "only.toml", "--json", "--only", "ssrf", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        skipped = report(done)["skipped"]
        assert any("http_request cannot reach the redirector" in s for s in skipped), skipped


class TestRaces:
    """No weakened config makes a race escape (the scratch mounts never hold the canary),
    so the direction shown is the one that holds, for every file tool and mount."""

    def test_the_default_holds_while_a_name_flips(self, tmp_path: Path) -> None:
        junit = tmp_path / "out.xml"
        done = selftest("--only", "races", "--json", "--junit", str(junit), cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        cases = junit_cases(junit)
        assert len(cases) == 4 * 3  # four tools on each of the default's three mounts
        for tool in ("file_read", "file_write", "file_edit", "file_list"):
            case = f"selftest.races: {tool} on /workspace: a symlink swapped in during the call"
            assert cases[case] is True


class TestAttachmentsAndMedia:
    """``attachment_save`` and ``send_media`` take the path corpus too. No config lets
    either out of a scratch mount, so the direction shown is the one that holds; each
    tool's plain call on each mount (a file sent reaches the channel, where the canary's
    bytes are looked for; an attachment saved lands in the mount) makes it mean something,
    and a plain call that fails would be reported as not run."""

    def test_the_default_holds(self, tmp_path: Path) -> None:
        junit = tmp_path / "out.xml"
        done = selftest("--only", "paths", "--json", "--junit", str(junit), cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert report(done)["not_run"] == []  # every plain call worked, or was refused the mount
        cases = junit_cases(junit)
        for tool in ("attachment_save", "send_media"):
            for mount in ("/workspace", "/shared", "/tmp"):
                case = f"selftest.paths: {tool} on {mount}: "
                case += "path traversal, symlinks, hard links, encodings"
                assert cases[case] is True


SECRETS = """
[secrets.api]
from_env = "SELFTEST_UNSET_A"
hosts = ["api.example.com"]
header = "Authorization"
format = "Bearer {value}"

[secrets.repos]
from_env = "SELFTEST_UNSET_B"
hosts = ["api.github.com", "*.github.com:8443"]
paths = ["/repos/"]
methods = ["POST"]
"""


class TestSecretsSent:
    """No config can bind a secret to the recorder's port before it exists, so the
    direction shown is the one that holds; the control (the value does arrive where the
    scratch config binds it, on the secret's own path and method) makes it mean something."""

    def test_no_value_reaches_an_unbound_host(self, tmp_path: Path) -> None:
        (tmp_path / "secrets.toml").write_text(SECRETS)
        junit = tmp_path / "out.xml"
        done = selftest(
            "--config", "secrets.toml", "--only", "secrets", "--json", "--junit", str(junit),
            cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert report(done)["skipped"] == []  # both controls carried the value
        cases = junit_cases(junit)
        sent = [
            "secrets.api: {{secret:NAME}} to a host it is not bound to",
            "secrets.api: added by the host, to a host it is not bound to",
            "secrets.api: a redirect from a bound host",
            "secrets.repos: {{secret:NAME}} to a host it is not bound to",
            "secrets.repos: a redirect from a bound host",
        ]
        for case in sent:
            assert cases[f"selftest.secrets: {case}"] is True
        assert "selftest.secrets: secrets.repos: added by the host" not in " ".join(cases)
