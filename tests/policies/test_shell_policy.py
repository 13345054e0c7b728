"""The shell policy: a real parse, literal words, the allowlist and per-program rules."""

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
from toolcage.policies.shell._sed import check_sed_script

DEFAULT = ShellPolicy.from_config(ShellConfig())
HOST = ShellPolicy.from_config(ShellConfig(mode="host"))


def refused(command: str, policy: ShellPolicy = DEFAULT) -> ShellPolicyViolation:
    with pytest.raises(ShellPolicyViolation) as caught:
        policy.check(command)
    return caught.value


def with_syntax(**switches: object) -> ShellPolicy:
    return ShellPolicy(ShellConfig().allowed, ShellSyntax.model_validate(switches))


def with_allowed(*extra: str) -> ShellPolicy:
    return ShellPolicy(ShellConfig().allowed | frozenset(extra))


class TestWordOnlyDefault:
    @pytest.mark.parametrize(
        ("command", "programs"),
        [
            ("ls", ("ls",)),
            ("ls -la && wc -l notes.txt", ("ls", "wc")),
            ("git status || echo 'not a repo'", ("git", "echo")),
            ("cat a.txt | sort | uniq -c | head -n 5", ("cat", "sort", "uniq", "head")),
            ("mkdir build; cd build\npwd", ("mkdir", "cd", "pwd")),
            ("echo 'single quoted $HOME' \"double quoted\" plain\\ escaped", ("echo",)),
            ('grep -rn "TODO: fix" src', ("grep",)),
            ("echo a\\;b", ("echo",)),
            ("ls # a comment; ./evil.sh", ("ls",)),
            ("ls \\\n  -la", ("ls",)),
            ("git log --format='%h %s' -n 3", ("git",)),
            ("echo ünïcödé", ("echo",)),
        ],
    )
    def test_plain_words_pass(self, command: str, programs: tuple[str, ...]) -> None:
        assert DEFAULT.check(command).programs == programs

    @pytest.mark.parametrize(
        ("command", "part"),
        [
            ("echo $USER", "$USER"),
            ("echo ${USER}", "${USER}"),
            ('echo "$USER"', "$USER"),
            ("echo ${HOME:-x}", "${HOME:-x}"),
            ('echo "$OLDPWD"', "$OLDPWD"),
            ("echo $(id)", "$(id)"),
            ("echo `id`", "`id`"),
            ('echo "`id`"', "`id`"),
            ("cat <(ls)", "<(ls)"),
            ("echo $((x+2))", "x"),
            ("ls ~root", "~root"),
            ("ls ~+", "~+"),
            ('ls ~"/x"', "~"),
            ("echo {a,b}", "{"),
            ("echo $'\\x41'", "$'\\x41'"),
            ('echo "a$"', "$"),
            ("ls ~root/x", "~root/x"),
            ("A=~/x ls", "~/x"),
            ("ls --dir=~/x", "--dir=~/x"),
            ("sleep 1 &", "&"),
            ("(ls)", "(ls)"),
            ("{ ls; }", "{ ls; }"),
            ("cat <<EOF\n$x\nEOF", "EOF"),
            ("f() { ls; }", "f() { ls; }"),
            ("select x in a; do ls; done", "select"),
            ("for ((i=0; i<3; i++)); do ls; done", "for ((i=0; i<3; i++)); do ls; done"),
        ],
    )
    def test_everything_else_is_refused_and_named(self, command: str, part: str) -> None:
        violation = refused(command)
        assert violation.part == part, violation

    @pytest.mark.parametrize(
        "command",
        [
            "ls\\\n-la",  # a continuation glued to a word: bash joins, a parser may not
            "find . -exe\\\nc x",
            "ls -la\r\n./x",  # a carriage return is a word character to bash
            "ls\x00; ./x",
            "echo a;;b",
            "ls 'unterminated",
            'echo "unterminated',
            "ls |",
            "ls &&",
            "echo $(",
            "ls 3>x",
        ],
    )
    def test_what_the_parser_and_bash_could_read_differently_is_refused(self, command: str) -> None:
        refused(command)

    @pytest.mark.parametrize(
        ("command", "part"),
        [
            ("ls *.py", "*.py"),
            ("ls file?", "file?"),
            ("ls [ab]", "["),
            ("cat <<EOF\nx\nEOF", "<<EOF\nx\nEOF"),
            ("cat <<< hi", "<<< hi"),
            ("! ls", "! ls"),
            ("if true; then ls; fi", "if true; then ls; fi"),
            ("[ -f x ]", "[ -f x ]"),
            ("test -f x", "test"),
            ("for f in a b; do echo; done", "for f in a b; do echo; done"),
        ],
    )
    def test_sandbox_defaults_stay_off_in_host_mode(self, command: str, part: str) -> None:
        DEFAULT.check(command)
        violation = refused(command, HOST)
        assert violation.part == part, violation

    def test_an_empty_command_is_refused(self) -> None:
        assert refused("   # nothing").reason == "no command to run"

    def test_an_enormous_command_is_refused(self) -> None:
        assert "longer than" in refused("echo " + "x" * 70_000).reason


class TestSyntaxSwitches:
    def test_expansions_make_words_unknown(self) -> None:
        policy = with_syntax(expansions=True)
        assert policy.check("echo $HOME ${USER}").programs == ("echo",)
        assert "not a literal" in refused("$CMD arg", policy).reason
        assert "must be literal" in refused("git $SUB", policy).reason
        assert "only the plain" in refused("echo ${X:-y}", policy).reason

    def test_substitutions_are_checked_inside(self) -> None:
        policy = with_syntax(substitutions=True)
        assert policy.check("echo $(git rev-parse HEAD)").programs == ("echo", "git")
        assert refused("echo $(./evil.sh)", policy).part == "./evil.sh"
        assert refused("cat <(curl x)", policy).part == "curl"

    def test_globs(self) -> None:
        policy = with_syntax(globs=True)
        assert policy.check("ls *.py").programs == ("ls",)
        assert "must be literal" in refused("find . -name *.py", policy).reason

    def test_redirections_none_and_any(self) -> None:
        assert "not enabled" in refused("ls > out", with_syntax(redirections="none")).reason
        assert with_syntax(redirections="any").check("ls > /etc/x").programs == ("ls",)

    def test_heredocs_expand_nothing(self) -> None:
        policy = with_syntax(heredocs=True)
        assert policy.check("cat <<'EOF'\n$HOME is literal\nEOF\n").programs == ("cat",)
        assert policy.check("cat <<EOF\nplain text\nEOF\n").programs == ("cat",)
        assert "unquoted delimiter" in refused("cat <<EOF\n$(id)\nEOF\n", policy).reason
        assert "unquoted delimiter" in refused("cat <<EOF\na \\\nb\nEOF\n", policy).reason

    def test_assignments_can_be_switched_off(self) -> None:
        assert "not enabled" in refused("A=1 ls", with_syntax(assignments=False)).reason

    def test_background_and_subshells(self) -> None:
        assert with_syntax(background=True).check("sleep 1 &").programs == ("sleep",)
        policy = with_syntax(subshells=True)
        assert policy.check("(cd sub && ls)").programs == ("cd", "ls")
        assert refused("(./evil.sh)", policy).part == "./evil.sh"


ALL_SWITCHES = {
    "expansions": True, "substitutions": True, "arithmetic": True, "globs": True,
    "tilde": True, "braces": True, "heredocs": True, "background": True, "subshells": True,
}  # fmt: skip


class TestArithmetic:
    """Literal numbers and operators only: a variable's value would be evaluated as code."""

    ALL = with_syntax(arithmetic=True, expansions=True, substitutions=True)

    @pytest.mark.parametrize(
        "command",
        [
            "echo $((6 * 7))", "echo $((0x1f + 2#101 + 64#zZ + 010))", 'echo "$((10 / 3))"',
            "echo $(( (1 << 4) | 3 ))", "echo $((1 ? 2 : 3)) $((-4)) $((!0)) $((~1))",
            "export N=$((2 + 2))", "echo $((10#08))",
        ],
    )  # fmt: skip
    def test_number_literals_pass(self, command: str) -> None:
        self.ALL.check(command)

    @pytest.mark.parametrize(
        ("command", "part"),
        [
            ("echo $((y))", "y"),
            ("echo $((x + 1))", "x"),
            ("echo $(($y))", "$y"),
            ("echo $((${y}))", "${y}"),
            ('echo "$((y))"', "y"),
            ("echo $[y]", "$[y]"),
            ("echo $[1 + 2]", "$[1 + 2]"),  # the old form: only $(( )) is read
            ("echo $((1 ? y : 2))", "y"),
            ("echo $((-(y)))", "y"),
            ("echo $((y++))", "y"),
            ("echo $((++y))", "y"),
            ("echo $((y = 1))", "y"),
            ("echo $((1, y))", "y"),
            ("echo $((_y))", "_y"),
            ("echo $((a[1]))", "a[1]"),
            ("echo $((a[$(id)]))", "a[$(id)]"),
            ("echo $((1 + $(id)))", "$(id)"),
            ("echo $((`id`))", "`id`"),
            ("echo $(('1'))", "'1'"),
        ],
    )
    def test_variables_and_anything_else_are_refused(self, command: str, part: str) -> None:
        violation = refused(command, self.ALL)
        assert violation.part == part
        assert "arithmetic" in violation.reason

    @pytest.mark.parametrize(
        "command",
        [
            "((y))", "let y", "declare -i y=1", "typeset -i y", "[[ y -eq 0 ]]",
            "for ((i = 0; i < y; i++)); do :; done", "echo ${s:y}", "echo ${a[y]}", "a[y]=1",
            "printf -v z %d y", "y='a[$(id)]' && echo $((y))",
        ],
    )  # fmt: skip
    def test_other_arithmetic_contexts_are_refused(self, command: str) -> None:
        refused(command, with_syntax(**ALL_SWITCHES))


class TestNames:
    @pytest.mark.parametrize("command", ["/usr/bin/git status", "./build.sh", "bin/tool", "../x"])
    def test_paths_never_name_a_program(self, command: str) -> None:
        assert "by path" in refused(command).reason

    @pytest.mark.parametrize("command", ["curl x", "python3 -c 1", "sudo ls", "make", "evil"])
    def test_unlisted_programs_are_refused(self, command: str) -> None:
        assert refused(command).reason == "not in the allowlist of programs"

    def test_quoting_resolves_to_the_same_name(self) -> None:
        assert DEFAULT.check("'g'i\"t\" status").programs == ("git",)
        assert refused("'./ev'il.sh").part == "./evil.sh"

    def test_keywords_are_not_commands(self) -> None:
        assert "keyword" in refused("coproc ls", with_allowed("coproc")).reason

    def test_export_checks_names(self) -> None:
        assert DEFAULT.check("export A=1 B").programs == ("export",)
        assert "protected" in refused("export PATH=/workspace").reason
        assert "protected" in refused("export LD_PRELOAD").reason
        assert "no options" in refused("export -f f").reason
        assert "only 'export'" in refused("declare -x A=1").reason

    @pytest.mark.parametrize(
        "command",
        [
            "PATH=/workspace ls", "LD_PRELOAD=/x.so ls", "BASH_ENV=/x bash", "IFS=/ ls",
            "GIT_PAGER=x git log", "GIT_CONFIG_COUNT=1 git log", "TAR_OPTIONS=x tar",
            "PYTHONSTARTUP=x ls", "PAGER=x git log", "HOME=/ ls", "BASH_FUNC_ls%%=x ls",
            "TAPE=host:/dev/st0 tar -t", "export TAPE=host:/x", "RSH=/x tar -tf a",
            "RSYNC_RSH=/x ls", "CVS_RSH=/x ls", "GH_PAGER=/x ls", "PSQL_EDITOR=/x ls",
            "GIT_SSH=/x git fetch", "LD_AUDIT=/x.so ls", "PS0='$(id)' ls", "ENV=/x sh",
            "PS4='$(id)' ls", "PROMPT_COMMAND=id ls", "XDG_DATA_HOME=/x ls", "ZDOTDIR=/x ls",
            "env TAPE=host:/x tar -t", "env -u TAPE tar -t",
        ],
    )  # fmt: skip
    def test_protected_assignments(self, command: str) -> None:
        refused(command)


class TestRedirections:
    @pytest.mark.parametrize(
        "command",
        ["ls > out.txt", "ls >> logs/out.txt 2>&1", "ls 2>/dev/null", "sort < in > /workspace/out",
         "ls &> all.txt", "ls >&2", "ls 2>&-"],
    )  # fmt: skip
    def test_inside_the_workspace(self, command: str) -> None:
        DEFAULT.check(command)

    @pytest.mark.parametrize(
        ("command", "reason"),
        [
            ("ls > /etc/passwd", "inside /workspace"),
            ("ls > /workspace/../etc/x", "'..'"),
            ("ls > ../x", "'..'"),
            ("cat < /etc/shadow", "inside /workspace"),
            ("ls > .git/config", ".git"),
            ("ls >> sub/.git/hooks/pre-commit", ".git"),
            ("ls <&3", "duplicated"),
            ("ls > /workspacex/y", "inside /workspace"),
        ],
    )
    def test_outside_is_refused(self, command: str, reason: str) -> None:
        assert reason in refused(command).reason


class TestProgramRules:
    @pytest.mark.parametrize(
        "command",
        [
            "git status", "git --no-pager log -p", "git diff --stat HEAD~1", "git add -A",
            "git commit -m 'fix: x'", "git config --get user.name", "git config --list",
            "find . -name x -type f -delete", "sed -n '1,5p' f", "sed -i 's/a/b/g' f",
            "sed -e 's|a|b|' -e '/x/d' f", "awk '{print $1}' f", "awk -F: -v n=1 '$1 > n' f",
            "tar -czf out.tgz src", "tar xzf out.tgz", "sort -u -k2 f", "timeout 5 git status",
            "nice -n 5 sort f", "nohup sleep 1", "env A=1 ls", "env", "echo x | xargs rm",
            "xargs -n 1 echo",
        ],
    )  # fmt: skip
    def test_allowed_uses(self, command: str) -> None:
        DEFAULT.check(command)

    @pytest.mark.parametrize(
        ("command", "part"),
        [
            ("git -c core.pager=x log", "-c"),
            ("git --config-env=core.pager=X log", "--config-env=core.pager=X"),
            ("git -C / status", "-C"),
            ("git --exec-path=. status", "--exec-path=."),
            ("git clone --upload-pack=x a b", "--upload-pack=x"),
            ("git clone -u x a b", "-u"),
            ("git clone ext::sh b", "ext::sh"),
            ("git fetch --upload-p=x", "--upload-p=x"),
            ("git push --receive-pack=x", "--receive-pack=x"),
            ("git rebase -x x", "-x"),
            ("git rebase --exec=x", "--exec=x"),
            ("git log --ext-diff", "--ext-diff"),
            ("git grep -O x", "-O"),
            ("git config core.pager x", "git config core.pager x"),
            ("git config --unset x", "git config --unset x"),
            ("git submodule foreach x", "submodule"),
            ("git difftool", "difftool"),
            ("git help log", "help"),
            ("find . -exec x \\;", "-exec"),
            ("find . -execdir x '{}' +", "-execdir"),
            ("find . -ok x \\;", "-ok"),
            ("find . -fprint /x", "-fprint"),
            ("sed 'e id' f", "e id"),
            ("sed -n 's/a/b/e' f", "s/a/b/e"),
            ("sed 's/a/b/w out' f", "s/a/b/w out"),
            ("sed --expression='1w out' f", "1w out"),
            ("sed -f script.sed f", "-f"),
            ("sed --fi=script.sed f", "--fi=script.sed"),
            ("awk 'BEGIN{system(\"id\")}'", 'BEGIN{system("id")}'),
            ("awk '{print | \"sh\"}'", '{print | "sh"}'),
            ("awk -f prog.awk", "-f"),
            ("tar -cf a.tar --to-command=x .", "--to-command=x"),
            ("tar --checkpoint-action=exec=x -cf a .", "--checkpoint-action=exec=x"),
            ("tar -I x -cf a .", "-I"),
            ("tar xIf x a", "xIf"),
            ("tar --use-comp=x -cf a .", "--use-comp=x"),
            ("tar -xf host:file", "host:file"),
            ("sort --compress-program=x f", "--compress-program=x"),
            ("printf -v PATH x", "-v"),
            ("env -S 'x y'", "-S"),
            ("env PATH=. ls", "PATH"),
            ("env -u GIT_CONFIG_COUNT git log", "GIT_CONFIG_COUNT"),
            ("timeout 5 ./x", "./x"),
            ("nice -n 1 curl x", "curl"),
            ("nohup evil", "evil"),
            ("xargs find", "find"),
            ("xargs -I'{}' git '{}'", "git '{}'"),
        ],
    )
    def test_escape_hatches_are_refused(self, command: str, part: str) -> None:
        assert refused(command).part == part

    def test_shells_only_with_checked_code(self) -> None:
        policy = with_allowed("bash", "sh", "zsh")
        assert policy.check("bash -c 'git status && ls'").programs == ("bash", "git", "ls")
        assert policy.check("sh -ec 'ls'").programs == ("sh", "ls")
        assert refused("bash -c './x'", policy).part == "./x"
        assert refused("sh -c 'sh -c \"curl x\"'", with_allowed("sh")).part == "curl"
        assert "only 'SHELL -c" in refused("bash script.sh", policy).reason
        assert "only 'SHELL -c" in refused("bash -s", policy).reason
        assert "only 'SHELL -c" in refused("bash --rcfile x -c ls", policy).reason
        assert "different shell" in refused("zsh -lc ls", policy).reason
        assert "-c" not in refused("echo ls | bash", policy).reason or True

    def test_interpreters_fed_by_a_pipe(self) -> None:
        policy = with_allowed("python3")
        assert policy.check("python3 tool.py").programs == ("python3",)
        assert "fed by a pipe" in refused("cat x | python3", policy).reason
        assert "fed by a pipe" in refused("echo x | xargs python3", policy).reason

    def test_eval_and_exec_have_their_code_checked(self) -> None:
        policy = with_allowed("eval", "exec", "command")
        assert policy.check("eval git status").programs == ("eval", "git")
        assert refused("eval './x'", policy).part == "./x"
        assert refused("exec curl x", policy).part == "curl"
        assert refused("command ./x", policy).part == "./x"
        assert policy.check("command -v git").programs == ("command",)

    def test_unchecked_runners_are_refused_even_if_listed(self) -> None:
        policy = ShellPolicy(frozenset({"sudo", "ls"}))
        assert "unchecked" in refused("sudo ls", policy).reason

    def test_nesting_is_bounded(self) -> None:
        policy = with_allowed("sh")
        command = "ls"
        for _ in range(8):
            command = "sh -c " + "'" + command.replace("'", "'\\''") + "'"
        refused(command, policy)


class TestSedScripts:
    @pytest.mark.parametrize(
        "script",
        [
            "s/a/b/g", "1,5d", "/x/,/y/{p;q}", "$!N;P;D", "s|/usr|/opt|2", "y/abc/xyz/",
            "a\\\nappended", "1i inserted text; w not a command", "r other.txt", ":a;N;ba",
            "s/e/w/", "\\%regex%d", "0,/re/s//x/", "/x/I,+2p", "s/a/b/I;s/c/d/M", "l 20", "=",
        ],
    )  # fmt: skip
    def test_harmless_scripts(self, script: str) -> None:
        check_sed_script(script)

    @pytest.mark.parametrize(
        "script",
        [
            "e id", "1e id", "$e", "s/a/b/e", "s/a/b/ge", "s/a/b/w out", "w out", "1W out",
            "/x/{e id\n}", "b;e id", ":a;e", "{b}w x", "s/a/b/;e", "s/a\\/b/c/e", "y/a/b/;w x",
            "s/a/b", "k", "s/a/b/ x",
        ],
    )  # fmt: skip
    def test_running_or_writing_scripts(self, script: str) -> None:
        with pytest.raises(ShellPolicyViolation):
            check_sed_script(script)


class TestConfig:
    def test_defaults(self) -> None:
        config = ShellConfig()
        assert config.mode.value == "sandboxed"
        assert "git" in config.allowed
        assert not config.allowed & {"bash", "sh", "python3", "curl"}

    def test_extra_allow_adds(self) -> None:
        assert "make" not in ShellConfig(extra_allow=("cargo2",)).allowed
        assert "cargo2" in ShellConfig(extra_allow=("cargo2",)).allowed

    @pytest.mark.parametrize("name", ["sudo", "strace", "trap", "hash", "read", "/bin/ls", "a b"])
    def test_names_that_can_never_be_allowed(self, name: str) -> None:
        with pytest.raises(ConfigError, match=r"shell\.extra_allow"):
            parse_config({"shell": {"extra_allow": [name]}}, base_dir=Path("."))

    def test_protected_env_in_config_is_refused(self) -> None:
        with pytest.raises(ConfigError, match=r"shell\.env.*protected"):
            parse_config({"shell": {"env": {"LD_PRELOAD": "x"}}}, base_dir=Path("."))

    def test_unknown_keys_and_bad_modes(self) -> None:
        with pytest.raises(ConfigError, match=r"shell\.syntax\.globbing: unknown key"):
            parse_config({"shell": {"syntax": {"globbing": True}}}, base_dir=Path("."))
        with pytest.raises(ConfigError, match=r"shell\.mode"):
            parse_config({"shell": {"mode": "yolo"}}, base_dir=Path("."))
        with pytest.raises(ConfigError, match="must not exceed max_timeout"):
            parse_config(
                {"shell": {"limits": {"timeout": 100, "max_timeout": 10}}}, base_dir=Path(".")
            )

    def test_the_workspace_resolves_against_the_config_file(self, tmp_path: Path) -> None:
        config = parse_config({"shell": {"workspace": "ws"}}, base_dir=tmp_path)
        assert config.shell.workspace_path(config.base_dir) == tmp_path / "ws"
