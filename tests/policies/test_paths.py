"""Canonicalising guest paths over the real host tree behind the mounts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from toolcage.policies import GrantedMount, PathPolicyViolation, canonical_guest_path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``ws`` (rw at /workspace), ``ro`` (read-only at /docs), and ``outside`` (no mount)."""
    for name in ("ws/src", "ro/sub", "outside"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "ws/src/a.c").write_text("int main;")
    (tmp_path / "ro/sub/readme").write_text("docs")
    (tmp_path / "outside/secret").write_text("SECRET")
    return tmp_path.resolve()


@pytest.fixture
def mounts(tree: Path) -> tuple[GrantedMount, ...]:
    return (
        GrantedMount(tree / "ro", "/docs", False),
        GrantedMount(tree / "ws", "/workspace", True),
    )


def ok(path: str, mounts: tuple[GrantedMount, ...], need: str = "read") -> str:
    return canonical_guest_path(path, mounts, need)  # type: ignore[arg-type]


def denied(path: str, mounts: tuple[GrantedMount, ...], need: str = "read") -> str:
    with pytest.raises(PathPolicyViolation) as info:
        canonical_guest_path(path, mounts, need)  # type: ignore[arg-type]
    return str(info.value)


class TestPlainPaths:
    @pytest.mark.parametrize(
        ("path", "canonical"),
        [
            ("/workspace/src/a.c", "/workspace/src/a.c"),
            ("src/a.c", "/workspace/src/a.c"),
            ("./src//./a.c", "/workspace/src/a.c"),
            (".", "/workspace"),
            ("/workspace/src/../src/a.c", "/workspace/src/a.c"),
            ("/../workspace/src", "/workspace/src"),
            ("/docs/sub/readme", "/docs/sub/readme"),
            ("src/new/dir/file.txt", "/workspace/src/new/dir/file.txt"),
        ],
    )
    def test_canonical_form(
        self, mounts: tuple[GrantedMount, ...], path: str, canonical: str
    ) -> None:
        assert ok(path, mounts) == canonical

    @pytest.mark.parametrize(
        ("path", "reason"),
        [
            ("/etc/passwd", "outside the mounts"),
            ("../outside/secret", "climbs out of mount /workspace"),
            ("/workspace/../docs/sub/readme", "climbs out of mount /workspace"),
            ("/workspacex/a", "outside the mounts"),
            ("/", "not inside a mount"),
            ("", "is empty"),
            ("src/a.c\x00.txt", "NUL byte"),
            ("src/\udcc0\udcae", "not valid UTF-8"),
            ("src/nothere/../a.c", "after a component that does not exist"),
            ("src/a.c/..", "after a file"),
            ("a" * 256, "longer than 255 bytes"),
            ("a/" * 2100, "longer than 4096 bytes"),
        ],
    )
    def test_refused(self, mounts: tuple[GrantedMount, ...], path: str, reason: str) -> None:
        message = denied(path, mounts)
        assert reason in message
        assert "allowed roots: /docs (read-only), /workspace (read-write)" in message

    def test_write_needs_a_writable_mount(self, mounts: tuple[GrantedMount, ...]) -> None:
        assert ok("/docs/sub/readme", mounts, "read") == "/docs/sub/readme"
        assert "read-only for this tool" in denied("/docs/sub/readme", mounts, "write")
        assert "read-only for this tool" in denied("/docs/new", mounts, "write")
        assert ok("/workspace/new", mounts, "write") == "/workspace/new"

    def test_a_mount_root_cannot_be_modified(self, mounts: tuple[GrantedMount, ...]) -> None:
        assert "cannot be modified" in denied("/workspace/src/..", mounts, "write")

    def test_no_mounts_names_none(self) -> None:
        assert "allowed roots: none" in denied("/workspace/a", ())


class TestSymlinks:
    def test_relative_link_inside_is_followed(
        self, tree: Path, mounts: tuple[GrantedMount, ...]
    ) -> None:
        (tree / "ws/link").symlink_to("src/a.c")
        assert ok("link", mounts) == "/workspace/src/a.c"

    def test_dotdot_applies_after_the_link_is_resolved(
        self, tree: Path, mounts: tuple[GrantedMount, ...]
    ) -> None:
        # textually "deep/.." is ".", but deep -> src/sub so deep/.. is src
        (tree / "ws/src/sub").mkdir()
        (tree / "ws/deep").symlink_to("src/sub")
        assert ok("deep/../a.c", mounts) == "/workspace/src/a.c"

    def test_relative_link_to_outside_is_refused(
        self, tree: Path, mounts: tuple[GrantedMount, ...]
    ) -> None:
        (tree / "ws/out").symlink_to("../outside/secret")
        assert "climbs out of mount" in denied("out", mounts)

    def test_absolute_link_to_outside_is_refused(
        self, tree: Path, mounts: tuple[GrantedMount, ...]
    ) -> None:
        (tree / "ws/abs").symlink_to(tree / "outside/secret")
        assert "symlink to outside the mounts" in denied("abs", mounts)

    def test_absolute_link_into_a_mount_maps_back(
        self, tree: Path, mounts: tuple[GrantedMount, ...]
    ) -> None:
        (tree / "ws/docs").symlink_to(tree / "ro/sub")
        assert ok("docs/readme", mounts) == "/docs/sub/readme"
        assert "read-only" in denied("docs/readme", mounts, "write")

    def test_chain_of_links_ending_outside_is_refused(
        self, tree: Path, mounts: tuple[GrantedMount, ...]
    ) -> None:
        (tree / "ws/c3").symlink_to("../outside")
        (tree / "ws/src/c2").symlink_to("../c3")
        (tree / "ws/c1").symlink_to("src/c2")
        assert "climbs out" in denied("c1/secret", mounts)

    def test_loop_is_refused(self, tree: Path, mounts: tuple[GrantedMount, ...]) -> None:
        (tree / "ws/l1").symlink_to("l2")
        (tree / "ws/l2").symlink_to("l1")
        assert "too many levels" in denied("l1/x", mounts)
        (tree / "ws/self").symlink_to(".")
        assert ok("self/" * 30 + "src", mounts) == "/workspace/src"
        assert "too many levels" in denied("self/" * 41 + "src", mounts)

    def test_dangling_link_resolves_to_its_target(
        self, tree: Path, mounts: tuple[GrantedMount, ...]
    ) -> None:
        (tree / "ws/dangling").symlink_to("src/later.txt")
        assert ok("dangling", mounts, "write") == "/workspace/src/later.txt"

    def test_link_into_an_ungranted_directory_is_refused(
        self, tree: Path, mounts: tuple[GrantedMount, ...]
    ) -> None:
        (tree / "ws/abs").symlink_to(tree / "ro/sub")
        only_ws = tuple(m for m in mounts if m.guest == "/workspace")
        assert "outside the mounts" in denied("abs/readme", only_ws)


class TestFileKinds:
    def test_fifo_is_refused(self, tree: Path, mounts: tuple[GrantedMount, ...]) -> None:
        os.mkfifo(tree / "ws/pipe")
        assert "FIFO" in denied("pipe", mounts)

    def test_hard_linked_file_is_refused(
        self, tree: Path, mounts: tuple[GrantedMount, ...]
    ) -> None:
        os.link(tree / "outside/secret", tree / "ws/hard")
        assert "2 hard links" in denied("hard", mounts)
        assert "2 hard links" in denied("hard", mounts, "write")
