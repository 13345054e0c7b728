"""Environment variables a command may not set, because programs read them to run code.

The dynamic loader (``LD_PRELOAD``), the shell itself (``BASH_ENV``, ``PATH``, ``IFS``,
``PS0``-``PS4``, ``PROMPT_COMMAND``), git (``GIT_*``: pager, ssh command, config injection
through ``GIT_CONFIG_COUNT``), tar (``TAR_OPTIONS=--to-command=...``, and ``TAPE``, whose
``host:file`` form makes tar start a remote shell), remote shells (``RSH``, ``RSYNC_RSH``,
``CVS_RSH``), pagers, editors and browsers (any ``*_PAGER``, ``*_EDITOR``, ``*_BROWSER``,
``*_ASKPASS``), interpreters' start-up hooks (``PYTHONSTARTUP``, ``PERL5OPT``,
``NODE_OPTIONS``), configuration search paths (``XDG_*``, ``HOME``, ``ZDOTDIR``) and
glibc's module loaders (``GCONV_PATH``, ``OPENSSL_CONF``) all turn a variable into a
program. The policy refuses assignments to these names, the sidecar drops them from a
session's saved environment, and the sandbox sets the ones it needs itself.
"""

from __future__ import annotations

PROTECTED_NAMES = frozenset(
    {
        "PATH", "IFS", "ENV", "BASH_ENV", "SHELL", "SHELLOPTS", "BASHOPTS", "CDPATH",
        "GLOBIGNORE", "PROMPT_COMMAND", "PS1", "PS2", "PS3", "PS4", "HISTFILE", "HOME",
        "INPUTRC", "FPATH", "FIGNORE", "EXECIGNORE", "TMOUT", "POSIXLY_CORRECT",
        "EDITOR", "VISUAL", "PAGER", "MANPAGER", "MANOPT", "BROWSER", "TERMINFO",
        "TAR_OPTIONS", "GZIP", "BZIP2", "BZIP", "XZ_OPT", "XZ_DEFAULTS", "ZSTD_CLEVEL",
        "GREP_OPTIONS", "SORT", "AWKPATH", "AWKLIBPATH", "GCONV_PATH", "LOCPATH", "NLSPATH",
        "HOSTALIASES", "RESOLV_HOST_CONF", "LOCALDOMAIN", "RES_OPTIONS", "OPENSSL_CONF",
        "OPENSSL_ENGINES", "OPENSSL_MODULES", "SSL_CERT_FILE", "SSL_CERT_DIR",
        "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS", "TMPDIR", "TZDIR",
        "MAIL", "MAILPATH", "EMACSLOADPATH", "VIMINIT", "EXINIT", "MYVIMRC",
        "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
        "RUBYOPT", "RUBYLIB", "GEM_HOME", "GEM_PATH", "LUA_INIT", "LUA_PATH", "LUA_CPATH",
        "PHPRC", "PHP_INI_SCAN_DIR", "TCLLIBPATH", "R_PROFILE", "R_PROFILE_USER",
        "SSH_ASKPASS", "SUDO_ASKPASS", "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS",
        "PROMPT_DIRTRIM", "HISTCONTROL", "MAKEFLAGS", "MFLAGS", "MAKEFILES", "GNUMAKEFLAGS",
        "CC", "CXX", "CPP", "LD", "AR", "LESSOPEN", "LESSCLOSE", "LESSKEY", "LESSSECURE",
        "SYSTEMD_PAGER", "TOOLCAGE_COMMAND", "TAPE", "RSH", "RMT", "PS0", "FCEDIT", "ZDOTDIR",
        "PWD", "CONFIG_SITE", "CONFIG_SHELL", "TERMINFO_DIRS", "TERMCAP", "CURL_HOME", "WGETRC",
    }
)  # fmt: skip
"""Exact names."""

PROTECTED_PREFIXES = (
    "LD_", "DYLD_", "BASH_", "GIT_", "PYTHON", "PERL", "NODE_", "NPM_", "npm_", "YARN_",
    "LESS", "SSH_", "SUDO_", "GPG", "GNUPG", "MALLOC_", "GLIBC_", "CARGO_", "RUSTC",
    "RUSTDOC", "GO", "CGO_", "PIP_", "UV_", "VIRTUAL_ENV", "CONDA", "TOOLCAGE_", "KRB5",
    "TAR_", "XDG_", "OPENSSL_", "RUBY", "LUA_", "JAVA", "JDK_", "DENO_", "BUN_", "RSYNC_",
    "CVS", "SYSTEMD_", "DBUS_",
)  # fmt: skip
"""Name prefixes (a whole family of settings)."""

PROTECTED_SUFFIXES = ("_PAGER", "_EDITOR", "_BROWSER", "_ASKPASS", "_RSH", "_SSH_COMMAND")
"""Name endings: however a program spells its pager, editor or remote shell, it runs it."""


SANDBOX_HOME = "/tmp"  # noqa: S108 - the sandbox's own private tmpfs
"""``HOME`` of every command: the sandbox's private ``/tmp``, fixed (``HOME`` is protected),
so ``$HOME`` and ``~`` name no host directory and the shell policy knows their value."""
FIXED_VARIABLES = frozenset({"HOME", "PWD"})
"""Variables the sandbox itself sets, which ``ShellSyntax.fixed_variables`` lets commands
expand: ``HOME`` (:data:`SANDBOX_HOME`) and ``PWD`` (the working directory, always an
absolute path; commands cannot assign it)."""


def is_env_name(name: str) -> bool:
    """Whether ``name`` is a shell variable name: ``[A-Za-z_][A-Za-z0-9_]*``."""
    if not name or not name.isascii() or name[0].isdigit():
        return False
    return all(c.isalnum() or c == "_" for c in name)


def protected_env_reason(name: str) -> str | None:
    """Why a command may not set ``name``, or ``None`` when it may."""
    if not is_env_name(name):
        return "not a valid variable name"
    if name in PROTECTED_NAMES:
        return "protected variable (programs read it to find or run code)"
    for prefix in PROTECTED_PREFIXES:
        if name.startswith(prefix):
            return f"protected variable ({prefix}* settings can make programs run code)"
    for suffix in PROTECTED_SUFFIXES:
        if name.endswith(suffix):
            return f"protected variable (*{suffix} names a program to run)"
    return None
