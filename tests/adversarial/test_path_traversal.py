"""Path traversal: hundreds of hostile paths and planted traps against the path policy.

First the :class:`PathCheck` alone (every hostile path is refused, or canonicalised to a
path whose real host location lies inside a granted mount), then through the full
:class:`Runtime` with host tools that trust the check completely, so a wrong answer would
show as a sentinel read, written, listed or deleted, or a read-only file changed.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from toolcage.policies import GrantedMount, MountPolicy
from toolcage.runtime import (
    PermissionDeniedError,
    Runtime,
    ToolExecutionContext,
    ToolValidationError,
)
from toolcage.runtime._path_check import PathCheck
from toolcage.runtime.selftest import ROOT, hostile_paths

from ._guests import GuestRunner, build_guest
from ._host_tools import HostFileTool, host_tools
from ._tree import DOCS, SECRET, build_tree, config_for, flipping_symlink, policy_for, snapshot

pytestmark = pytest.mark.adversarial

CORPUS = hostile_paths()
CTX = ToolExecutionContext()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile").resolve()
    build_tree(root)
    return root


@pytest.fixture(scope="module")
def policy(root: Path) -> MountPolicy:
    return policy_for(root)


def real(path: str, root: Path) -> str:
    return path.replace(ROOT, str(root))


def assert_inside(guest: str, mounts: tuple[GrantedMount, ...], root: Path) -> GrantedMount:
    """``guest`` names a place whose real host location is inside its mount."""
    for mount in mounts:
        if guest == mount.guest or guest.startswith(mount.guest + "/"):
            host = Path(mount.host, guest[len(mount.guest) :].lstrip("/"))
            assert os.path.realpath(host).startswith(str(mount.host)), guest
            assert "outside" not in os.path.relpath(os.path.realpath(host), root).split("/")[0]
            return mount
    raise AssertionError(f"{guest!r} is in no mount")


class TestCorpusAgainstTheCheck:
    def test_corpus_is_large(self) -> None:
        assert len(CORPUS) >= 300

    @pytest.mark.parametrize("path", CORPUS)
    @pytest.mark.parametrize("op", ["read", "write"])
    def test_refused_or_kept_inside(
        self, path: str, op: str, root: Path, policy: MountPolicy
    ) -> None:
        tool = HostFileTool("read" if op == "read" else "write", policy)
        mounts = policy.mounts_for(tool.name, tool.safety_tier.value, CTX.principal)
        refused: PermissionDeniedError | ToolValidationError | None = None
        try:
            out = PathCheck(policy).check(tool, {"path": real(path, root)}, CTX)
        except (PermissionDeniedError, ToolValidationError) as exc:
            refused = exc
        if isinstance(refused, PermissionDeniedError):
            assert "allowed roots: /docs" in refused.message
            return
        if refused is not None:  # no usable path at all: empty, NUL, not UTF-8, too long
            assert refused.field == "path"
            assert refused.message.startswith(f"{tool.name}: path: path ")
            return
        mount = assert_inside(out["path"], mounts, root)
        if op == "write":
            assert mount.writable


class TestCorpusThroughTheRuntime:
    """Each operation over the whole corpus, on a fresh tree, through the real pipeline."""

    @pytest.fixture
    async def fresh(self, tmp_path: Path) -> AsyncIterator[tuple[Path, Runtime]]:
        root = tmp_path.resolve()  # noqa: ASYNC240 (set-up, before anything runs)
        build_tree(root)
        config = config_for(root)
        tools = host_tools(MountPolicy.from_config(config))
        async with Runtime.from_config(config, tools=tools) as runtime:
            yield root, runtime

    @pytest.mark.anyio
    @pytest.mark.parametrize("op", ["read", "list", "write", "delete"])
    async def test_no_sentinel_touched(self, op: str, fresh: tuple[Path, Runtime]) -> None:
        root, runtime = fresh
        outside_before = snapshot(root / "outside")
        docs_before = snapshot(root / "docs")
        leaks = []
        for path in CORPUS:
            args = {"path": real(path, root)}
            if op == "write":
                args["content"] = "OVERWRITTEN"
            result = await runtime.execute(f"host_file_{op}", args)
            if SECRET in result.output_text or "secret.txt" in result.output_text.split("\n"):
                leaks.append(path)
        assert leaks == []
        assert snapshot(root / "outside") == outside_before
        assert snapshot(root / "docs") == docs_before
        assert (root / "outside/secret.txt").read_text() == SECRET
        assert (root / "docs/readme").read_text() == DOCS


class TestScenarios:
    def check(self, policy: MountPolicy, path: str, op: str = "read") -> str:
        tool = HostFileTool(op, policy)  # type: ignore[arg-type]
        return str(PathCheck(policy).check(tool, {"path": path}, CTX)["path"])

    @pytest.mark.parametrize(
        ("path", "reason"),
        [
            ("escape/secret.txt", "climbs out of mount /workspace"),
            ("escape_abs/secret.txt", "symlink with an absolute target"),
            ("chain1/secret.txt", "climbs out of mount /workspace"),
            ("dir_escape/secret.txt", "symlink with an absolute target"),
            ("docs_link/readme", "symlink with an absolute target"),
            ("loop_a", "too many levels of symbolic links"),
            ("self_loop/" * 41 + "sub", "too many levels of symbolic links"),
            ("hard_secret", "hard links"),
            ("pipe", "FIFO"),
        ],
    )
    def test_trap_is_refused(self, policy: MountPolicy, path: str, reason: str) -> None:
        with pytest.raises(PermissionDeniedError, match=reason):
            self.check(policy, path)

    def test_link_into_read_only_mount_cannot_write(self, policy: MountPolicy) -> None:
        for op in ("read", "write"):
            with pytest.raises(PermissionDeniedError, match="absolute target"):
                self.check(policy, "docs_link/readme", op)

    def test_symlink_swapped_while_checking(self, tmp_path: Path) -> None:
        """A thread flips ``race`` between a file and a link out; no check may pass it."""
        build_tree(tmp_path)
        policy = policy_for(tmp_path)
        outcomes = {"allowed": 0, "denied": 0}
        with flipping_symlink(tmp_path.resolve()):
            for _ in range(3000):
                try:
                    out = self.check(policy, "race")
                except PermissionDeniedError:
                    outcomes["denied"] += 1
                else:
                    assert out == "/workspace/race"
                    outcomes["allowed"] += 1
        assert (tmp_path / "outside/secret.txt").read_text() == SECRET
        # Which states the loop met is up to the scheduler; each state, held still, is judged
        # the same way.
        race = tmp_path / "ws/race"
        race.unlink()
        race.symlink_to(tmp_path.resolve() / "outside/secret.txt")
        with pytest.raises(PermissionDeniedError):
            self.check(policy, "race")
        race.unlink()
        race.write_text("harmless")
        assert self.check(policy, "race") == "/workspace/race"

    def test_a_race_is_reported_in_words(self, tmp_path: Path) -> None:
        """Whatever moment the flip hits, a refusal names a reason, never raw errno text."""
        build_tree(tmp_path)
        policy = policy_for(tmp_path)
        reasons = (
            "changed while it was being checked",
            "symlink with an absolute target",
        )
        messages = set()
        with flipping_symlink(tmp_path.resolve()):
            for _ in range(3000):
                try:
                    self.check(policy, "race")
                except PermissionDeniedError as exc:
                    messages.add(exc.message)
        # The link held still is refused in the same words, however the loop went.
        race = tmp_path / "ws/race"
        race.unlink()
        race.symlink_to(tmp_path.resolve() / "outside/secret.txt")
        with pytest.raises(PermissionDeniedError) as refused:
            self.check(policy, "race")
        messages.add(refused.value.message)
        assert [m for m in messages if not any(reason in m for reason in reasons)] == []


@pytest.fixture(scope="module")
def cat_runner() -> GuestRunner:
    return GuestRunner(build_guest("cat"))


class TestCheckThenUse:
    """The check, then a real WASI guest opening the checked path, while the tree changes."""

    def test_swapped_symlink_never_reaches_the_guest(
        self, tmp_path: Path, cat_runner: GuestRunner
    ) -> None:
        build_tree(tmp_path)
        root = tmp_path.resolve()
        policy = policy_for(root)
        tool = HostFileTool("read", policy)
        (mount,) = (
            m
            for m in policy.mounts_for(tool.name, "read_only", CTX.principal)
            if m.guest == "/workspace"
        )
        check = PathCheck(policy)

        def check_then_read(stdout: Path) -> str | None:
            """What the guest read of the checked path; ``None`` if the check refused."""
            try:
                checked = check.check(tool, {"path": "race"}, CTX)
            except PermissionDeniedError:
                return None
            cat_runner.run(["cat", checked["path"]], [(mount.host, mount.guest, False)], stdout)
            return stdout.read_text()

        with flipping_symlink(root) as race:
            for i in range(300):
                text = check_then_read(root / f"out-{i}.txt")
                assert text is None or SECRET not in text
        # Whether any check passed above is up to the scheduler; with the name left as the
        # harmless file, the same check and read must work.
        race.unlink(missing_ok=True)
        race.write_text("harmless")
        assert check_then_read(root / "out-final.txt") == "harmless"
