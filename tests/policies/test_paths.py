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

    @pytest.mark.parametrize(
        "target",
        [
            "outside/secret",  # outside every mount
            "ro/sub",  # into another mount's host directory
            "ro/sub/",
            "ws/src",  # into the same mount
            "ws/src/a.c",
            "ws/../ws/src",
            "",  # the tree's root itself
        ],
    )
    @pytest.mark.parametrize("need", ["read", "write", "delete"])
    def test_absolute_target_is_refused_wherever_it_points(
        self, tree: Path, mounts: tuple[GrantedMount, ...], target: str, need: str
    ) -> None:
        (tree / "ws/abs").symlink_to(f"{tree}/{target}")
        for path in ("abs/x", "abs/../src", "src/../abs/."):
            message = denied(path, mounts, need)
            assert "symlink with an absolute target" in message
            assert "only relative symlinks are followed" in message

    @pytest.mark.parametrize("target", ["/", "/etc/passwd", "/workspace/src", "/docs/sub"])
    def test_absolute_target_in_guest_terms_is_refused(
        self, tree: Path, mounts: tuple[GrantedMount, ...], target: str
    ) -> None:
        (tree / "ws/abs").symlink_to(target)
        assert "symlink with an absolute target" in denied("abs", mounts)

    def test_relative_and_absolute_spelling_agree(
        self, tree: Path, mounts: tuple[GrantedMount, ...]
    ) -> None:
        # Both name the read-only mount's host directory; neither is followed.
        (tree / "ws/rel").symlink_to("../ro/sub")
        (tree / "ws/abs").symlink_to(tree / "ro/sub")
        assert "climbs out of mount /workspace" in denied("rel/readme", mounts)
        assert "symlink with an absolute target" in denied("abs/readme", mounts)

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
        (tree / "ws/rel").symlink_to("../ro/sub")
        only_ws = tuple(m for m in mounts if m.guest == "/workspace")
        assert "climbs out of mount /workspace" in denied("rel/readme", only_ws)


class TestDelete:
    """A path to delete keeps its last component: a symlink there is the thing deleted."""

    @pytest.mark.parametrize(
        "target", ["../../outside/secret", "ABS/outside/secret", "ABS/ro/sub", "../../ro", "gone"]
    )
    def test_a_link_pointing_anywhere_can_be_deleted(
        self, tree: Path, mounts: tuple[GrantedMount, ...], target: str
    ) -> None:
        (tree / "ws/src/link").symlink_to(target.replace("ABS", str(tree)))
        assert ok("src/link", mounts, "delete") == "/workspace/src/link"
        assert ok("/workspace/src/../src/./link", mounts, "delete") == "/workspace/src/link"

    def test_links_before_the_last_component_are_still_resolved(
        self, tree: Path, mounts: tuple[GrantedMount, ...]
    ) -> None:
        (tree / "ws/out").symlink_to("../outside")
        (tree / "ws/abs").symlink_to(tree / "outside")
        (tree / "ws/inner").symlink_to("src")
        assert "climbs out" in denied("out/secret", mounts, "delete")
        assert "absolute target" in denied("abs/secret", mounts, "delete")
        assert "climbs out" in denied("out/", mounts, "delete")
        assert ok("inner/a.c", mounts, "delete") == "/workspace/src/a.c"

    def test_delete_needs_a_writable_mount_and_no_mount_root(
        self, tree: Path, mounts: tuple[GrantedMount, ...]
    ) -> None:
        (tree / "ro/link").symlink_to("sub")
        assert "read-only for this tool" in denied("/docs/link", mounts, "delete")
        assert "cannot be modified" in denied("/workspace", mounts, "delete")
        assert "cannot be modified" in denied("src/..", mounts, "delete")

    def test_a_fifo_can_be_deleted_but_not_opened(
        self, tree: Path, mounts: tuple[GrantedMount, ...]
    ) -> None:
        os.mkfifo(tree / "ws/pipe")
        assert ok("pipe", mounts, "delete") == "/workspace/pipe"
        assert "FIFO" in denied("pipe", mounts, "write")

    def test_a_hard_linked_file_is_still_refused(
        self, tree: Path, mounts: tuple[GrantedMount, ...]
    ) -> None:
        os.link(tree / "outside/secret", tree / "ws/hard")
        assert "2 hard links" in denied("hard", mounts, "delete")


class TestMalformed:
    @pytest.mark.parametrize(
        "path",
        ["", "a\x00b", "src/\udcc0", "a" * 256, "src/" + "é" * 128, "a/" * 2100, "/" * 4097],
    )
    @pytest.mark.parametrize("need", ["read", "write", "delete"])
    def test_input_shape_is_flagged_as_malformed(
        self, mounts: tuple[GrantedMount, ...], path: str, need: str
    ) -> None:
        with pytest.raises(PathPolicyViolation) as info:
            canonical_guest_path(path, mounts, need)  # type: ignore[arg-type]
        assert info.value.malformed

    @pytest.mark.parametrize("path", ["/etc/passwd", "../outside/secret", "/docs/new"])
    def test_policy_refusals_are_not(self, mounts: tuple[GrantedMount, ...], path: str) -> None:
        with pytest.raises(PathPolicyViolation) as info:
            canonical_guest_path(path, mounts, "write")
        assert not info.value.malformed

    def test_the_longest_legal_name_passes(self, mounts: tuple[GrantedMount, ...]) -> None:
        name = "a" * 255
        assert ok(name, mounts, "write") == f"/workspace/{name}"


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
