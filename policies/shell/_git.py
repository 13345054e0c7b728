"""git's rule: global options, subcommands and the options and addresses that run programs.

What a repository's own config could make git run (hooks, filters, diff drivers, pagers)
is no business of the command line; the sandbox's git guard handles that, and refuses the
local transports through which one command would reach another repository's config (see
``toolcage.sidecar._sandbox``).
"""

from __future__ import annotations

from ._rules import Inner, Unknown, long_hit, options, refuse
from ._words import SimpleCommand

_GIT_GLOBAL_OK = frozenset(
    {"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
     "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--version"}
)  # fmt: skip
_GIT_SUBCOMMANDS = frozenset(
    {
        "status", "log", "diff", "show", "branch", "tag", "rev-parse", "rev-list", "ls-files",
        "ls-tree", "cat-file", "blame", "grep", "shortlog", "describe", "add", "rm", "mv",
        "commit", "init", "restore", "switch", "checkout", "reset", "stash", "merge-base",
        "show-ref", "config", "apply", "revert", "cherry-pick", "merge", "rebase", "clone",
        "fetch", "pull", "push", "remote", "clean", "whatchanged", "reflog", "version",
    }
)  # fmt: skip
_GIT_LONG = (
    "upload-pack", "receive-pack", "exec", "config", "config-env", "template", "ext-diff",
    "open-files-in-pager", "recurse-submodules", "recursive", "interactive", "exec-path",
    "git-dir", "work-tree", "namespace", "super-prefix", "help", "edit-todo",
)  # fmt: skip
_GIT_PATHSPECS = frozenset(
    {"add", "rm", "mv", "diff", "log", "show", "status", "ls-files", "blame", "checkout",
     "restore", "commit", "grep", "reset", "stash", "clean", "shortlog", "whatchanged"}
)  # fmt: skip
"""Subcommands whose operands are paths and revisions of this repository, never an address:
a glob or loop variable may stand there."""
_GIT_SHORT = {"clone": "uc", "rebase": "xi", "grep": "O", "add": "ip", "commit": "p"}
_GIT_CONFIG_READS = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "get", "list"}
)
_GIT_CONFIG_MODIFIERS = frozenset(
    {"--show-origin", "--show-scope", "--name-only", "--null", "-z", "--local", "--global",
     "--system", "--worktree", "--includes", "--no-includes", "--bool", "--int", "--path",
     "--bool-or-int", "--expiry-date"}
)  # fmt: skip


def git_rule(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] not in _GIT_GLOBAL_OK:
            raise refuse(
                "git",
                args[i],
                "this global option is refused (-c, -C, --config-env, "
                "--exec-path, --git-dir and the like change what git runs)",
            )
        i += 1
    if i == len(args):
        return []
    sub = args[i]
    if isinstance(sub, Unknown) or sub not in _GIT_SUBCOMMANDS:
        raise refuse("git", sub, "this subcommand is not allowed")
    rest = args[i + 1 :]
    for arg in rest:
        if isinstance(arg, Unknown) and sub not in _GIT_PATHSPECS:
            raise refuse("git", arg, f"git {sub} takes literal arguments only")
        if "::" in arg:
            raise refuse("git", arg, "'<helper>::' addresses run a transport program (ext::)")
    for arg in options(rest):
        hit = long_hit(arg, _GIT_LONG)
        if hit:
            raise refuse("git", arg, f"--{hit} is refused (it runs programs or opens editors)")
        if arg.startswith("-") and not arg.startswith("--"):
            letters = set(arg[1:]) & set(_GIT_SHORT.get(sub, ""))
            if letters:
                raise refuse("git", arg, f"-{''.join(sorted(letters))} is refused for git {sub}")
    if sub == "config":
        if not any(arg in _GIT_CONFIG_READS for arg in rest):
            raise refuse("git", cmd.text, "git config may only read (--get, --list)")
        for arg in rest:
            if arg.startswith("-") and arg not in _GIT_CONFIG_READS | _GIT_CONFIG_MODIFIERS:
                raise refuse("git", arg, "git config may only read (--get, --list)")
    return []
