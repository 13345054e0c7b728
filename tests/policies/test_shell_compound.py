"""What the default (sandboxed) policy admits beyond literal words, and how it checks it:
globs, ``test``/``[``/``[[``, loops and conditionals, here-documents, long chains."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolcage.policies import (
    ConfigError,
    ShellConfig,
    ShellPolicy,
    ShellPolicyViolation,
    ShellSyntax,
)
from toolcage.policies._config import parse_config
from toolcage.policies.shell._parse import MAX_COMMANDS, MAX_DEPTH

DEFAULT = ShellPolicy.from_config(ShellConfig())


def refused(command: str, policy: ShellPolicy = DEFAULT) -> ShellPolicyViolation:
    with pytest.raises(ShellPolicyViolation) as caught:
        policy.check(command)
    return caught.value


class TestModeDefaults:
    def test_unset_switches_follow_the_mode(self) -> None:
        sandboxed = ShellConfig().effective_syntax
        host = ShellConfig(mode="host").effective_syntax
        for switch in ("globs", "heredocs", "test_commands", "control_flow"):
            assert getattr(sandboxed, switch) is True
            assert getattr(host, switch) is False
        assert sandboxed.expansions is False
        assert sandboxed.substitutions is False

    def test_an_operator_can_turn_each_off_or_on(self) -> None:
        off = ShellConfig(syntax=ShellSyntax(globs=False, control_flow=False))
        assert off.effective_syntax.globs is False
        assert off.effective_syntax.heredocs is True
        policy = ShellPolicy.from_config(off)
        assert "not enabled" in refused("ls *.py", policy).reason
        assert "not enabled" in refused("for f in a; do ls; done", policy).reason
        on = ShellConfig(mode="host", syntax=ShellSyntax(globs=True))
        assert ShellPolicy.from_config(on).check("ls *.py").programs == ("ls",)

    def test_the_switches_read_from_a_config_file(self, tmp_path: Path) -> None:
        config = parse_config(
            {"shell": {"syntax": {"control_flow": False, "globs": True}}}, base_dir=tmp_path
        )
        syntax = config.shell.effective_syntax
        assert (syntax.control_flow, syntax.globs, syntax.test_commands) == (False, True, True)
        with pytest.raises(ConfigError, match=r"shell\.syntax\.test_commands"):
            parse_config({"shell": {"syntax": {"test_commands": "maybe"}}}, base_dir=tmp_path)

    def test_the_builtins_come_with_their_switches(self) -> None:
        assert {"test", "[", "break", "continue"} <= DEFAULT.allowed
        host = ShellPolicy.from_config(ShellConfig(mode="host"))
        assert not {"test", "[", "break", "continue"} & host.allowed


class TestGlobs:
    @pytest.mark.parametrize(
        "command",
        [
            "grep -rn 'def main' --include=*.py .",
            "grep -c foo src/*.py",
            "ls -d */",
            "rm -f *.log",
            "cat /etc/*",  # the sandbox's /etc: a few staged files
            "sed -n 1,5p src/*.py",
            "awk -e '{print}' src/*.py",
            "tar -czf out.tgz src/*.py",
            "tar czf out.tgz src/*.py",
            "git add src/*.py",
            "git diff -- src/*.py",
            "find src/* -name x",
            "sort src/*.txt",
            "printf '%s\\n' src/*",
            "[ -f src/*.py ]",
        ],
    )
    def test_globs_pass(self, command: str) -> None:
        DEFAULT.check(command)

    @pytest.mark.parametrize(
        ("command", "part"),
        [
            ("/???/??t /etc/*", "/???/??t"),
            ("./sent*", "./sent*"),
            ("*", "*"),
            ("sort *.txt", "*.txt"),  # `*` may match a file named --compress-program=...
            ("tar -cf *.tar src", "*.tar"),
            ("tar -czf s*.tgz src", "s*.tgz"),
            ("tar czf s* src", "s*"),
            ("tar -cf list -T s*", "s*"),
            ("sed s* x", "s*"),
            ("sed -e s* x", "s*"),
            ("awk a* x", "a*"),
            ("git clone e* x", "e*"),
            ("git push origin b*", "b*"),
            ("git s*", "s*"),
            ("find . -name *.py", "*.py"),
            ("xargs -a l* echo", "l*"),
            ("env A=b* ls", "A=b*"),
        ],
    )
    def test_globs_that_may_become_options_or_programs_are_refused(
        self, command: str, part: str
    ) -> None:
        assert refused(command).part == part

    @pytest.mark.parametrize(
        "command",
        ["echo x > out*.txt", "echo x > /workspace/*.txt", "echo x >> logs/a?.log", "ls > s[ab]"],
    )
    def test_glob_redirect_targets_inside_the_workspace(self, command: str) -> None:
        DEFAULT.check(command)

    @pytest.mark.parametrize(
        ("command", "reason"),
        [
            ("echo x > .g*/config", "may not start with '.'"),
            ("echo x > .*", "may not start with '.'"),
            ("echo x > [.]git", "may not start with '.' or '['"),
            ("echo x > src/.?", "may not start with '.'"),
            ("echo x > /work*/x", "inside /workspace"),
            ("echo x > /*/x", "inside /workspace"),
            ("echo x > ../*.txt", "'..'"),
            ("echo x > .git/h*", "into .git"),
        ],
    )
    def test_glob_redirect_targets_that_could_leave_are_refused(
        self, command: str, reason: str
    ) -> None:
        assert reason in refused(command).reason


class TestTestCommands:
    @pytest.mark.parametrize(
        "command",
        [
            "[ -f README.md ] && echo yes",
            "test -f README.md",
            "[ ! -d build ] || ls build",
            "[ a = b -o -f x ]",
            "[ 1 -lt 2 ]",
            "[[ -f x && -d y ]]",
            "[[ ! -e x || a == a* ]]",
            "[[ 3 -ge 2 ]]",
            "[[ abc < abd ]]",
            'for f in *.log; do [ -s "$f" ] && echo "$f"; done',
            'for f in *.log src/*; do test -n "$f"; done',
            "[ -f *.py ] || [ *.txt ]",
        ],
    )
    def test_tests_pass(self, command: str) -> None:
        DEFAULT.check(command)

    @pytest.mark.parametrize(
        ("command", "reason"),
        [
            ("[ -v 'a[$(./x)]' ]", "subscript"),
            ("test -R x", "subscript"),
            ("[ x -a -v y ]", "subscript"),
            ("[[ -v a ]]", "subscript"),
            ("[[ y -eq 0 ]]", "number literals"),
            ("[[ 1 -lt 'a[$(./x)]' ]]", "number literals"),
            ("[ a && ./x ]", "shell syntax"),
            ("[ a > /etc/x ]", "shell syntax"),
            ("[ a < /etc/shadow ]", "shell syntax"),
            ("[[ a =~ b ]]", "=~"),
            ("[ $(./x) ]", "not enabled"),
            ("[ -f $USER ]", "not enabled"),
            ("[ *v ]", "must be literal"),  # `*v` matches a file named -v
            ("[ -f -* ]", ""),
            ("[ [-]v ]", ""),
            ('for f in *; do [ -s "$f" ]; done', "must be literal"),
            ('for f in -?; do test "$f" x; done', "must be literal"),
            ('for f in [-]R; do test "$f" x; done', "must be literal"),
            ('for f in *.log; do test "$f.x"; done', "must be literal"),
        ],
    )
    def test_operands_that_run_code_are_refused(self, command: str, reason: str) -> None:
        assert reason in refused(command).reason

    def test_an_allowlisted_test_program_gets_the_same_rule(self) -> None:
        host = ShellPolicy(frozenset({"test", "command"}), mode=ShellConfig(mode="host").mode)
        assert "subscript" in refused("test -v 'a[$(./x)]'", host).reason
        assert "subscript" in refused("command test -v x", host).reason


class TestLoops:
    @pytest.mark.parametrize(
        ("command", "programs"),
        [
            ('for f in src/*.py; do wc -l "$f"; done', ("wc",)),
            ("for f in a b; do echo $f ${f}; done", ("echo",)),
            ('for f in src/*.py; do sed -n 1p "$f"; done', ("sed",)),
            ('for f in src/*.py; do git log -1 -- "$f"; done', ("git",)),
            ('for f in src/*.py; do [ -s "$f" ] && echo "$f"; done', ("[", "echo")),
            ("while true; do sleep 1; break; done", ("true", "sleep", "break")),
            ("until [ -f x ]; do touch x; done", ("[", "touch")),
            ("if grep -q a f; then echo y; elif test -d d; then pwd; else ls; fi", None),
            ('case "$x" in *.py|*.txt) echo text;; [ab]*) ls;; *) pwd;; esac', None),
            ("! grep -q x f", ("grep",)),
            ('for f in a; do for g in b; do echo "$f$g"; done; done', ("echo",)),
        ],
    )
    def test_loops_and_conditionals_pass(
        self, command: str, programs: tuple[str, ...] | None
    ) -> None:
        if command.startswith("case"):
            command = command.replace('"$x"', "main")
        verdict = DEFAULT.check(command)
        if programs is not None:
            assert verdict.programs == programs

    @pytest.mark.parametrize(
        ("command", "reason"),
        [
            ("for p in rm; do $p -rf /; done", "not a literal word"),
            ('for p in ls; do "$p"; done', "not a literal word"),
            ("for f in a; do ./x; done", "by path"),
            ("while true; do ./x; done", "by path"),
            ("if ./x; then ls; fi", "by path"),
            ("case $(./x) in a) ls;; esac", "not enabled"),
            ("case a in $(./x)) ls;; esac", "not enabled"),
            ("case a in @(x)) ls;; esac", "extglob"),
            ("for PATH in /workspace; do ls; done", "protected"),
            ("for BASH_ENV in x; do ls; done", "protected"),
            ("for f in $(./x); do ls; done", "not enabled"),
            ("for ((i=0; i<3; i++)); do ls; done", "not supported"),
            ("select f in a; do ls; done", "for loop"),
            ('for f in a; do env "$f"; done', "must be literal"),
            ('for f in a; do xargs "$f"; done', "must be literal"),
            ('for f in *; do sort "$f"; done', "must be literal"),  # `*` may match -v
            ("for f in a*; do [ $f = x ]; done", "must be literal"),  # unquoted: split
            ('for f in -v; do test "$f" x; done', "must be literal"),
            ("for f in ''; do test \"$f-v\" x; done", "must be literal"),
            ('for f in a; do f=-v; test "$f" x; done', "must be literal"),
            ('for f in a; do for f in -v; do true; done; test "$f" x; done', "must be literal"),
            ('for f in a b; do test "$f" x; eval f=-v; done', "must be literal"),
            ('for f in a b; do test "$f" x; read f; done', "must be literal"),
            ('for f in a b; do test "$f" x; f=-v; done', "must be literal"),
            ('for f in a; do export f=-v; test "$f" x; done', "must be literal"),
            ("for f in a; do echo; done; echo $f", "not enabled"),
            ("echo $f; for f in a; do echo; done", "not enabled"),
            ("for f in a; do [[ $f -eq 1 ]]; done", "number literals"),
            ("for f in a; do echo $((f)); done", "number literals"),
            ("for f in a; do echo > $f; done", "literal path"),
            ("coproc ls", "keyword"),
        ],
    )
    def test_what_a_loop_cannot_prove_is_refused(self, command: str, reason: str) -> None:
        assert reason in refused(command).reason

    @pytest.mark.parametrize(
        ("command", "programs"),
        [
            ('while IFS= read -r line; do echo "$line"; done < f', ("echo",)),
            ("find . -name '*.py' | while read -r f; do wc -l \"$f\"; done", ("find", "wc")),
            ('cat f | while read -r a b; do echo "$a" "$b"; done', ("cat", "echo")),
            ('while read; do echo "$REPLY"; done < f', ("echo",)),
            ("while read -d '' -r f; do ls $f; done < f", ("ls",)),
        ],
    )
    def test_read_loops_pass(self, command: str, programs: tuple[str, ...]) -> None:
        assert DEFAULT.check(command).programs == programs

    @pytest.mark.parametrize(
        ("command", "reason"),
        [
            ("while read -r f; do $f; done < f", "not a literal word"),
            ("while read PATH; do ls; done < f", "protected"),
            ("while read -a arr; do ls; done < f", "only -r"),
            ("while read 'a[$(./x)]'; do ls; done < f", "variable name"),
            ('while read -r f; do sed "$f" x; done < f', "must be literal"),
            ('while read -r f; do test "$f" x; done < f', "must be literal"),
            ("while X=1 read -r f; do ls; done < f", "IFS"),
            ("while read -r f < /etc/shadow; do ls; done", "inside /workspace"),
            ("while read -r f; do ls; done < f; echo $f", "not enabled"),
            ("read f", "allowlist"),
            ("while true; do read f; done", "allowlist"),
            ("while read -r f && ./x; do ls; done", "allowlist"),
        ],
    )
    def test_what_a_read_loop_cannot_prove_is_refused(self, command: str, reason: str) -> None:
        assert reason in refused(command).reason

    def test_a_loop_body_fed_by_a_pipe_counts_as_piped(self) -> None:
        policy = ShellPolicy(ShellConfig().allowed | {"python3"})
        assert "pipe" in refused("cat x | while true; do python3; done", policy).reason
        assert "pipe" in refused("for f in a; do python3; done < x", policy).reason

    def test_a_shell_gets_no_loop_variable(self) -> None:
        policy = ShellPolicy(ShellConfig().allowed | {"sh"})
        assert "must be literal" in refused('for f in a; do sh -c "$f"; done', policy).reason


class TestHeredocs:
    @pytest.mark.parametrize(
        ("command", "programs"),
        [
            ("cat <<'EOF' > notes.txt\nhello\nEOF", ("cat",)),
            ("cat > notes.txt <<'EOF'\nhello\nEOF", ("cat",)),
            ("cat <<'EOF' > a.txt 2>&1 >> b.txt\nx\nEOF", ("cat",)),
            ("cat <<'EOF' | sort | uniq\nb\na\nEOF", ("cat", "sort", "uniq")),
            ("cat <<'EOF' && ls\nx\nEOF", ("cat", "ls")),
            ("cat <<EOF > notes.txt\nplain text\nEOF", ("cat",)),
            ("grep -c x <<< 'xyz'", ("grep",)),
        ],
    )
    def test_heredocs_in_any_order(self, command: str, programs: tuple[str, ...]) -> None:
        assert DEFAULT.check(command).programs == programs

    @pytest.mark.parametrize(
        ("command", "reason"),
        [
            ("cat <<'EOF' > /etc/x\nhello\nEOF", "inside /workspace"),
            ("cat <<'EOF' > .git/config\nx\nEOF", "into .git"),
            ("cat <<'EOF' | ./x\na\nEOF", "by path"),
            ("cat <<'EOF' && ./x\na\nEOF", "by path"),
            ("cat <<EOF\n$(./x)\nEOF", "unquoted delimiter"),
            ("cat <<EOF\n`./x`\nEOF", "unquoted delimiter"),
            ("cat <<EOF\n$HOME\nEOF", "unquoted delimiter"),
            ('cat <<E"O"F\nx\nEOF', ""),
            ("cat <<'EOF'\nEOF\n./x\nEOF", "by path"),
            ("cat <<'EOF'\n./x\nEOF2", ""),
        ],
    )
    def test_heredoc_tricks_are_refused(self, command: str, reason: str) -> None:
        assert reason in refused(command).reason


class TestChains:
    def test_a_long_flat_chain_is_one_level(self) -> None:
        for joiner in (" && ", " || ", " ; ", "\n", " | "):
            command = joiner.join(f"echo {i}" for i in range(200))
            assert len(DEFAULT.check(command).programs) == 200

    def test_a_mixed_chain_keeps_its_order(self) -> None:
        command = "ls && pwd || echo a; wc -l x && cat y | sort"
        assert DEFAULT.check(command).programs == ("ls", "pwd", "echo", "wc", "cat", "sort")

    def test_real_nesting_is_still_bounded(self) -> None:
        command = "true"
        for _ in range(MAX_DEPTH):
            command = f"if true; then {command}; fi"
        assert "nested too deeply" in refused(command).reason

    def test_the_number_of_commands_is_bounded(self) -> None:
        command = " && ".join(["ls"] * (MAX_COMMANDS + 10))
        assert "commands" in refused(command).reason

    def test_a_chain_in_a_substitution_is_bounded_too(self) -> None:
        policy = ShellPolicy(ShellConfig().allowed, ShellSyntax(substitutions=True))
        command = "echo x"
        for _ in range(MAX_DEPTH):
            command = f"echo $({command})"
        assert "nested too deeply" in refused(command, policy).reason

    @pytest.mark.parametrize(
        "command",
        [
            "[ " + "! " * 5000 + "x ]",
            "[[ " + " && ".join(["-f x"] * 3000) + " ]]",
            "[[ " + "( " * 3000 + "x" + " )" * 3000 + " ]]",
            "echo $((" + "(" * 5000 + "1" + ")" * 5000 + "))",
        ],
    )
    def test_deep_expressions_get_a_verdict(self, command: str) -> None:
        """Expressions are walked without recursion: thousands of levels get an answer."""
        policy = ShellPolicy(ShellConfig().allowed, ShellSyntax(arithmetic=True))
        policy.check(command)
