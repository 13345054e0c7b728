"""The hostile-path corpus: generated, grouped, each group saying what it attacks.

Paths are relative to (or absolute in) the guest namespace of a planted tree
(``tests/adversarial/_tree.py``; ``toolcage selftest`` plants one in each scratch mount):
``/workspace`` (read-write), ``/docs`` (read-only) and, on the host beside them,
``outside/secret.txt`` -- the sentinel no path may reach. Shipped in the wheel, shared by
the test suite and ``toolcage selftest``.
"""

from __future__ import annotations

ROOT = "/@ROOT@"
"""Stands for the host directory of the tree; tests substitute the real one."""

TARGETS = ("outside/secret.txt", "outside", "outside/", "outside/new.txt")
"""What a traversal aims at, relative to the directory holding the mounts."""


def hostile_paths() -> list[str]:
    """At least 300 distinct hostile guest paths, with host paths written under ``ROOT``."""
    paths: list[str] = []
    add = paths.append

    # '../' chains at many depths, from the mount root, from a subdirectory, absolute
    for depth in range(1, 13):
        for target in TARGETS:
            add("../" * depth + target)
            add("/workspace/" + "../" * depth + target)
            add("sub/" + "../" * (depth + 1) + target)
            add("/docs/" + "../" * depth + target)
        add("/.." * depth + "/outside/secret.txt")
        add("./" + "..//" * depth + "outside/secret.txt")
        add("sub/deeper/" + "/./../" * (depth + 2) + "outside/secret.txt")

    # absolute host paths and procfs detours
    secret = ROOT + "/outside/secret.txt"
    for path in (
        secret,
        ROOT + "/outside",
        ROOT + "/ws/../outside/secret.txt",
        "/etc/passwd",
        "/etc/shadow",
        "/proc/self/root" + secret,
        "/proc/self/cwd/outside/secret.txt",
        "/proc/self/fd/0",
        "/dev/zero",
        "/workspace/proc/self/root" + secret,
        "/workspace/" + secret,
        "//" + secret.lstrip("/"),
        "/" + "/" * 5 + "etc/passwd",
    ):
        add(path)

    # URL-encoded and double-encoded separators and dots (literal names to the kernel)
    for dots, slash in (
        ("%2e%2e", "%2f"),
        ("%2e%2e", "/"),
        ("..", "%2f"),
        ("%252e%252e", "%252f"),
        ("%252e%252e", "/"),
        ("%c0%ae%c0%ae", "/"),
        ("%c0%ae%c0%ae", "%c0%af"),
        ("%e0%80%ae%e0%80%ae", "/"),
        ("..", "%5c"),
        ("%2E%2E", "%2F"),
    ):
        for depth in (1, 2, 5):
            add((dots + slash) * depth + "outside/secret.txt")
            add("/workspace/" + (dots + slash) * depth + "outside/secret.txt")

    # overlong UTF-8 and invalid bytes as Python receives them (surrogate escapes),
    # and their Latin-1 misreadings
    for dots in ("\udcc0\udcae\udcc0\udcae", "\udce0\udc80\udcae" * 2, "\u00c0\u00ae\u00c0\u00ae"):
        for slash in ("/", "\udcc0\udcaf", "\u00c0\u00af"):
            add((dots + slash) * 2 + "outside/secret.txt")
            add("/workspace/" + dots + slash + "outside")

    # Unicode look-alikes of '.' and '/'
    for dot in ("\u2024", "\uff0e", "\u3002", "\ufe52", "\u00b7", "\u0701", "\u2e33"):
        for slash in ("/", "\u2215", "\uff0f", "\u2044", "\u29f8", "\u2571"):
            add((dot * 2 + slash) * 3 + "outside/secret.txt")
    add("\u2025/outside/secret.txt")  # TWO DOT LEADER
    add("\u2026/outside/secret.txt")  # HORIZONTAL ELLIPSIS

    # backslashes (an ordinary name character on POSIX)
    for depth in (1, 2, 4, 8):
        add("..\\" * depth + "outside\\secret.txt")
        add("/workspace\\" + "..\\" * depth + "outside")
        add("..\\/" * depth + "outside/secret.txt")
        add("\\\\?\\" + "..\\" * depth + "outside")

    # NUL bytes and other control characters
    for path in (
        "secret.txt\x00",
        "../\x00/outside/secret.txt",
        "/workspace/\x00../outside/secret.txt",
        "\x00",
        "sub\x00/../../outside",
        "../outside/secret.txt\x00.png",
        "..\n/outside/secret.txt",
        "..\r/outside/secret.txt",
        "..\t/outside/secret.txt",
    ):
        add(path)

    # trailing and embedded dots and spaces
    for name in (".. ", " ..", "... ", "...", "....", ". .", "..%20", "..\u00a0", "..\u200b"):
        add(f"{name}/outside/secret.txt")
        add(f"/workspace/{name}/{name}/outside")
    for suffix in (".", " ", "..", ". ", "::$DATA", "/.", "/"):
        add("../outside/secret.txt" + suffix)
        add("/workspace/../outside" + suffix)

    # mount-name games
    for path in (
        "/workspacex/outside/secret.txt",
        "/workspacex",
        "/workspace../outside/secret.txt",
        "/workspace/../workspace/../outside/secret.txt",
        "/workspace/..",
        "/workspace/../",
        "/workspace/./../outside",
        "/WORKSPACE/../outside",
        "/Workspace/secret.txt",
        "/work/space",
        "/works",
        "/docs/../workspace/../outside",
        "/docsx/readme",
        "/shared/secret.txt",
        "/tmp/secret.txt",  # noqa: S108 (a hostile guest path, never opened on the host)
        "/",
        "/.",
        "/..",
        "",
        "~/outside/secret.txt",
        "~root/../outside",
        "$HOME/outside",
        "file:///etc/passwd",
        "file://" + secret,
    ):
        add(path)

    # through symlinks and links planted in the tree (see tests/adversarial/_tree.py)
    for link in ("escape", "escape_abs", "chain1", "loop_a", "self_loop", "dir_escape"):
        add(link)
        add(f"{link}/secret.txt")
        add(f"/workspace/{link}/../outside/secret.txt")
        add(f"sub/../{link}/secret.txt")
    for path in ("hard_secret", "pipe", "sub/../hard_secret", "docs_link/readme"):
        add(path)
    add("self_loop/" * 45 + "secret.txt")

    # the read-only mount itself: readable, never writable (write/delete must be refused)
    for path in (
        "/docs",
        "/docs/",
        "/docs/readme",
        "/docs/./readme",
        "/docs//readme",
        "/docs/new.txt",
        "/docs/newdir/new.txt",
        "/docs/readme/..",
        "docs_link",
        "docs_link/",
        "docs_link/new.txt",
        "docs_link/../docs_link/readme",
        ROOT + "/docs/readme",
    ):
        add(path)

    unique = list(dict.fromkeys(paths))
    if len(unique) < 300:  # the suites count on a corpus this large
        raise RuntimeError(f"the path corpus shrank to {len(unique)} paths")
    return unique
