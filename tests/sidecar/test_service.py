"""The daemon's pieces on their own: output keepers, the end-of-command report, sessions."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePosixPath

import pytest
from toolcage.policies import ShellLimits
from toolcage.sidecar._output import HeadTail, Ring
from toolcage.sidecar._report import parse_report
from toolcage.sidecar._sandbox import (
    _ETC as ETC_COPIED,
)
from toolcage.sidecar._sandbox import (
    BASH,
    GIT_GUARD,
    BubblewrapSandbox,
    UnsafeHostShell,
    prelude,
)
from toolcage.sidecar._service import ServiceError, ShellService


class TestHeadTail:
    def test_small_output_is_kept_whole(self) -> None:
        keeper = HeadTail(100)
        for chunk in (b"hello ", b"world", b"\n"):
            keeper.feed(chunk)
        assert keeper.text() == "hello world\n"
        assert keeper.dropped == 0

    def test_exactly_the_limit_is_kept_whole(self) -> None:
        keeper = HeadTail(10)
        keeper.feed(b"0123456789")
        assert keeper.text() == "0123456789"

    def test_a_flood_keeps_head_and_tail(self) -> None:
        keeper = HeadTail(10)
        for i in range(1000):
            keeper.feed(str(i % 10).encode() * 7)
        assert keeper.total == 7000
        assert keeper.dropped == 6990
        text = keeper.text()
        assert text.startswith("00000")
        assert text.endswith("99999")
        marker = (
            "[output truncated — original size: 7,000 bytes]\n"
            "[shown: the first 5 and the last 5 bytes]"
        )
        assert text == f"00000\n{marker}\n99999"

    def test_broken_utf8_is_replaced_not_fatal(self) -> None:
        keeper = HeadTail(5)  # the tail starts in the middle of a character
        keeper.feed("ééé".encode())
        assert "\ufffd" in keeper.text()


class TestRing:
    def test_takes_only_what_is_new(self) -> None:
        ring = Ring(100)
        ring.feed(b"one\n")
        assert ring.take() == ("one\n", 0)
        assert not ring.pending
        ring.feed(b"two\n")
        assert ring.pending
        assert ring.take() == ("two\n", 0)
        assert ring.take() == ("", 0)

    def test_counts_what_was_lost(self) -> None:
        ring = Ring(8)
        ring.feed(b"a" * 20)
        ring.feed(b"b" * 5)
        text, dropped = ring.take()
        marker = "[output truncated — original size: 25 bytes]\n[shown: the last 8 bytes]"
        assert text == f"{marker}\naaabbbbb"
        assert dropped == 17
        ring.feed(b"c")
        assert ring.take() == ("c", 0)  # the next read lost nothing


class TestReport:
    def test_cwd_and_environment(self) -> None:
        report = parse_report(
            b'cwd\0/workspace/a\0declare -x A="x \\"y\\" \\$z"\n'
            b"declare -x B=$'multi\\nline\\t\\303\\251\\E'\ndeclare -x UNSET\n"
            b'declare -ax ARRAY=([0]="1" [1]=$\'x\\ny\')\ndeclare -Ax MAP=(["a ]b"]="1" [c]="2" )\n'
            b'declare -rx READONLY="r"\nexport POSIX="p"\n'
        )
        assert report is not None
        assert report.cwd == "/workspace/a"
        assert report.env == {
            "A": 'x "y" $z',
            "B": "multi\nline\t\u00e9\x1b",
            "READONLY": "r",
            "POSIX": "p",
        }

    def test_what_bash_reports_reads_back_exactly(self, tmp_path: Path) -> None:
        values = {
            "PLAIN": "hello there",
            "QUOTES": "say \"hi\" 'there' \\ $HOME `date` ${x}",
            "NEWLINES": "a\nb\n\n",
            "CONTROL": "\x01\x07\x1b[0m\x7f\t\r",
            "UNICODE": "\u00e9\u00fc \u2603 \U0001f600",
            "EMPTY": "",
            "TRAILING_BACKSLASH": "x\\",
            "LOOKS_LIKE_A_LINE": 'v\ndeclare -x EVIL="1"',
        }
        for lang in ("C.UTF-8", "C"):
            script = f"exec 3>&1; {prelude(ShellLimits(), root=str(tmp_path), report_fd=3)}"
            command = "export " + " ".join(f'{name}="${{_{name}}}"' for name in values)
            command += """; declare -ax ARR=(1 $'x\\ny'); declare -Ax MAP=(["a ]b"]=1 [c]=2)"""
            env = {"LANG": lang, "PATH": "/usr/bin:/bin"}
            done = subprocess.run(
                [BASH, "--noprofile", "--norc", "-c", script, "t", command, str(tmp_path)],
                env=env | {f"_{name}": value for name, value in values.items()},
                capture_output=True,
                check=True,
            )
            report = parse_report(done.stdout)
            assert report is not None, done.stdout
            assert report.cwd == str(tmp_path)
            assert {k: report.env[k] for k in values} == values, lang
            assert "EVIL" not in report.env
            assert "ARR" not in report.env
            assert "MAP" not in report.env

    @pytest.mark.parametrize(
        "data",
        [
            b"",
            b"cwd\0/x",
            b"bogus\0x\0",
            b"env\0A\0",
            b"cwd\0\xff\0",
            b"cwd\0/x\0declare -x A=unquoted\n",
            b'cwd\0/x\0declare -x A="open\n',
            b"cwd\0/x\0declare -x A=$'open\n",
            b'cwd\0/x\0declare -x A="x" trailing\n',
            b'cwd\0/x\0declare -x A="\xff"\n',
            b"cwd\0/x\0" + b"x" * (300 * 1024),
        ],
    )
    def test_anything_odd_is_ignored(self, data: bytes) -> None:
        assert parse_report(data) is None


class TestSessions:
    def service(self, tmp_path: Path, sessions: int = 3) -> ShellService:
        limits = ShellLimits(sessions=sessions)
        return ShellService(UnsafeHostShell(tmp_path, limits), limits)

    def test_the_least_recently_used_idle_session_goes_first(self, tmp_path: Path) -> None:
        service = self.service(tmp_path)
        for name in ("a", "b", "c"):
            service.open(name)
        service.open("a")  # used again: now b is the oldest
        service.open("d")
        assert [name for _, name in service.sessions] == ["c", "a", "d"]

    def test_sessions_with_jobs_are_kept(self, tmp_path: Path) -> None:
        service = self.service(tmp_path, sessions=2)
        service.open("a")[0].jobs.add("job-1")
        service.open("b")[0].jobs.add("job-2")
        with pytest.raises(ServiceError, match="running jobs"):
            service.open("c")

    def test_carried_state_stays_inside_and_unprotected(self, tmp_path: Path) -> None:
        service = self.service(tmp_path)
        session, _ = service.open("s")
        service._carry(session, f"{tmp_path}/sub/dir", {"A": "1", "PATH": "/x", "LD_AUDIT": "y"})
        assert session.cwd == PurePosixPath("sub/dir")
        assert session.env == {"A": "1"}
        service._carry(session, "/etc", {})
        assert session.cwd == PurePosixPath("sub/dir")
        service._carry(session, f"{tmp_path}/../outside", {})
        assert session.cwd == PurePosixPath("sub/dir")


class TestSandboxCommandLine:
    def test_the_bwrap_command_line(self, tmp_path: Path) -> None:
        sandbox = BubblewrapSandbox(tmp_path, ShellLimits(), network=False, run_as=65534)
        spawn = sandbox.spawn("echo hi", PurePosixPath("sub"), {"A": "1"}, 9)
        argv = spawn.argv
        for flag in ("--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session"):
            assert flag in argv
        assert argv[argv.index("--bind") + 1 : argv.index("--bind") + 3] == [
            str(tmp_path),
            "/workspace",
        ]
        assert argv[-3:] == ["bash", "echo hi", "/workspace/sub"]
        assert "echo hi" not in argv[-4]  # the command is an argument, never script text
        assert spawn.user == 65534
        assert spawn.pass_fds == [9]
        etc = argv[argv.index("/etc") - 1]
        assert sorted(os.listdir(etc)) == sorted(
            ["passwd", "group", *(n for n in os.listdir("/etc") if n in ETC_COPIED)]
        )
        sandbox.close()
        assert not os.path.exists(etc)

    def test_network_can_be_shared(self, tmp_path: Path) -> None:
        sandbox = BubblewrapSandbox(tmp_path, ShellLimits(), network=True, run_as=None)
        assert "--unshare-net" not in sandbox._fixed
        sandbox.close()

    def test_the_prelude_applies_every_limit(self) -> None:
        limits = ShellLimits(processes=99, cpu_seconds=7, file_bytes=2048, memory_bytes=2**30)
        script = prelude(limits, root="/workspace", report_fd=5)
        assert "-u 99 -t 7" in script
        assert f"-v {2**30 // 1024} -f 2" in script
        assert 'eval "$__tc_command" 5>&-' in script

    def test_the_git_guard_forces_safe_settings(self) -> None:
        assert "core.hooksPath" in GIT_GUARD
        assert "core.fsmonitor" in GIT_GUARD
        assert "GIT_CONFIG_NOSYSTEM=1" in GIT_GUARD
        assert "protocol.allow' GIT_CONFIG_VALUE_" in GIT_GUARD
        assert GIT_GUARD.rstrip().endswith('exec -a "$name" /run/toolcage/git "${lead[@]}" "$@"')
