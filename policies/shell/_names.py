"""Program names the shell policy knows: the default allowlist and the never-allowed.

The default allowlist holds only programs whose ways of running other code are known and
covered by a rule in :mod:`._programs` (or that have none: ``cat`` runs nothing).
Programs that exist to run other programs without a way to check what they run (``sudo``,
``strace``, ``parallel``, ...) and builtins that rewrite the shell itself (``hash -p``,
``trap``, ``enable -f``, ``read PATH``) can never be allowlisted: the config refuses them.
"""

from __future__ import annotations

DEFAULT_ALLOW: tuple[str, ...] = (
    # shell builtins that only print, change directory or export checked variables
    "cd", "pwd", "echo", "printf", "true", "false", "export",
    # files and text, no way to run code
    "ls", "cat", "head", "tail", "wc", "uniq", "cut", "tr", "paste", "join", "nl", "tac",
    "rev", "fold", "comm", "cmp", "diff", "grep", "egrep", "fgrep", "basename", "dirname",
    "realpath", "readlink", "stat", "du", "df", "mkdir", "rmdir", "touch", "cp", "mv", "rm",
    "ln", "chmod", "tee", "seq", "sleep", "date", "whoami", "id", "uname", "nproc", "printenv",
    "md5sum", "sha1sum", "sha256sum", "sha512sum", "base64", "od", "file", "gzip", "gunzip",
    "zcat",
    # programs with argument rules
    "sort", "sed", "awk", "find", "git", "tar",
    # programs that run another program, which is checked in turn
    "env", "timeout", "nice", "nohup", "xargs",
)  # fmt: skip

UNCHECKED_RUNNERS = frozenset(
    {
        "sudo", "su", "doas", "pkexec", "runuser", "chroot", "unshare", "nsenter", "setsid",
        "setpriv", "ionice", "chrt", "taskset", "flock", "watch", "script", "ssh", "scp",
        "strace", "ltrace", "gdb", "lldb", "valgrind", "parallel", "busybox", "toybox",
        "socat", "nc", "ncat", "netcat", "expect", "screen", "tmux", "systemd-run", "fakeroot",
        "proot", "firejail", "bwrap", "capsh", "prlimit", "numactl", "catchsegv", "eatmydata",
        "faketime", "torsocks", "proxychains", "proxychains4", "dbus-launch", "xvfb-run",
        "at", "batch", "crontab", "nsjail", "sg", "newgrp", "login", "split", "rsync",
        "install", "make", "ld.so", "ld-linux.so.2", "ld-linux-x86-64.so.2", "stdbuf",
        "vi", "vim", "nvim", "view", "ex", "ed", "emacs", "nano", "less", "more", "man",
        "most", "pager", "sensible-pager", "editor", "sensible-editor", "run-parts", "patch",
        "zip", "unzip", "7z", "dpkg", "apt", "apt-get", "rpm", "dnf", "yum", "pip", "pip3",
        "npm", "npx", "yarn", "pnpm", "cargo", "go", "mvn", "gradle", "dotnet", "docker",
        "podman", "kubectl", "env-update", "open", "xdg-open", "sh-wrapper",
    }
)  # fmt: skip
"""Programs that run other code in ways the policy cannot check: never allowed."""

SHELL_STATE_BUILTINS = frozenset(
    {
        "trap", "enable", "hash", "alias", "unalias", "fc", "history", "bind", "complete",
        "compgen", "compopt", "read", "mapfile", "readarray", "getopts", "let", "declare",
        "typeset", "local", "readonly", "set", "shopt", "unset", "coproc", "function", "select",
    }
)  # fmt: skip
"""Builtins that change the shell's own state (variables, functions, traps, lookups)."""

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "rbash", "yash", "fish"})
"""Shells: allowed only as ``SHELL -c 'command'`` with the command checked too."""

INTERPRETERS = frozenset(
    {
        "python", "python2", "python3", "pypy", "pypy3", "perl", "perl5", "ruby", "irb",
        "node", "nodejs", "deno", "bun", "php", "lua", "luajit", "lua5.1", "lua5.3", "lua5.4",
        "Rscript", "R", "tclsh", "wish", "guile", "racket", "sbcl", "ghci", "runghc", "julia",
        "osascript", "pwsh", "powershell", "java", "jshell", "scala", "groovy", "elixir",
        "erl", "escript", "swift", "bc", "dc", "sqlite3", "psql", "mysql",
    }
)  # fmt: skip
"""Programs that run the code they are given; never fed from a pipe (its code is unseen)."""

RESERVED_WORDS = frozenset(
    {
        "!", "{", "}", "[[", "]]", "case", "coproc", "do", "done", "elif", "else", "esac",
        "fi", "for", "function", "if", "in", "select", "then", "until", "while",
    }
)  # fmt: skip
"""Bash reserved words: never a program name."""

GUARDED_BUILTINS = frozenset({"eval", "exec", "source", ".", "command", "builtin", "time"})
"""Refused unless allowlisted; when allowed, ``eval``, ``exec``, ``command``, ``builtin``
and ``time`` have what they run checked, while ``source`` runs a file nobody checked."""


def refusal_for_allowlisting(name: str) -> str | None:
    """Why ``name`` cannot go in the allowlist, or ``None`` when it can."""
    if not name or any(c.isspace() for c in name) or "/" in name:
        return "allowlist entries are plain program names (no paths, no spaces)"
    if name in UNCHECKED_RUNNERS:
        return "runs other code in ways the shell policy cannot check"
    if name in SHELL_STATE_BUILTINS:
        return "changes the shell's own variables, functions or lookups"
    if name in RESERVED_WORDS:
        return "a shell reserved word, not a program"
    return None
