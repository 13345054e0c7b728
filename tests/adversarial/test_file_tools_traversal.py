"""The hostile-path corpus and the planted traps against every real WASM file tool.

Through the full :class:`Runtime` (path policy, then the guest under wasmtime with only the
granted preopens), every file tool gets every hostile path in each of its path arguments.
No sentinel outside the mounts may be read, listed, written or deleted, and nothing on the
read-only mount may change. The other arguments are filled from the tool's own schema so
that an escaping call would act on the sentinel: a search or edit looks for its text.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from toolcage.runtime import Attachment, Runtime, ToolExecutionContext
from toolcage.runtime.selftest import ROOT, hostile_paths

from ._tree import DOCS, SECRET, build_tree, config_for, flipping_symlink, snapshot

FILE_TOOLS = (
    "file_read",
    "file_list",
    "file_search",
    "file_write",
    "file_edit",
    "file_delete",
    "attachment_save",
)
CORPUS = hostile_paths()


pytestmark = pytest.mark.adversarial


def fill(parameters: dict[str, Any], path_args: set[str]) -> dict[str, Any]:
    """Values for the non-path required arguments that would act on the sentinel."""
    args: dict[str, Any] = {}
    properties: dict[str, Any] = parameters.get("properties", {})
    for name in parameters.get("required", []):
        if name in path_args:
            continue
        kind = properties.get(name, {}).get("type")
        if kind == "string":
            args[name] = SECRET[:8] if name not in ("content", "new_string", "new") else "PWNED"
        elif kind == "integer":
            args[name] = 1
        elif kind == "boolean":
            args[name] = False
    return args


@pytest.fixture
async def tree_runtime(tmp_path: Path) -> AsyncIterator[tuple[Path, Runtime]]:
    root = tmp_path.resolve()  # noqa: ASYNC240 (set-up, before anything runs)
    build_tree(root)
    async with Runtime.from_config(config_for(root, shared=True)) as runtime:
        yield root, runtime


class TestEveryFileTool:
    @pytest.mark.anyio
    @pytest.mark.parametrize("name", FILE_TOOLS)
    async def test_corpus_touches_no_sentinel(
        self, name: str, tree_runtime: tuple[Path, Runtime]
    ) -> None:
        root, runtime = tree_runtime
        tool = runtime.registry.get(name, "default")
        path_args = set(getattr(tool, "path_arguments", {}))
        assert path_args, f"{name} declares no path arguments"
        base = fill(dict(tool.schema().parameters), path_args)
        paths = list(CORPUS)
        context = None
        if name == "attachment_save":
            # It only writes under /shared or /tmp: play the corpus there as well, with an
            # attachment of the turn that would overwrite whatever an escape reached.
            paths += [p.replace("/workspace", "/shared") for p in CORPUS if "/workspace" in p]
            context = ToolExecutionContext(
                attachments=(Attachment(base["attachment"], "text/plain", b"PWNED"),)
            )
            base["overwrite"] = True
        outside_before = snapshot(root / "outside")
        docs_before = snapshot(root / "docs")
        leaks = []
        for path in paths:
            for arg in path_args:
                args = {**base, **dict.fromkeys(path_args, "."), arg: path.replace(ROOT, str(root))}
                result = await runtime.execute(name, args, context)
                if SECRET in result.output_text:
                    leaks.append((arg, path))
        assert leaks == []
        if context is not None:  # the control: a plain save does work
            ok = await runtime.execute(name, {**base, "path": "/shared/ok.txt"}, context)
            assert not ok.is_error, ok.output_text
            assert (root / "shared/ok.txt").read_bytes() == b"PWNED"
        assert snapshot(root / "outside") == outside_before
        assert snapshot(root / "docs") == docs_before
        assert (root / "docs/readme").read_text() == DOCS

    @pytest.mark.anyio
    async def test_search_skips_hard_linked_files(self, tree_runtime: tuple[Path, Runtime]) -> None:
        # The path policy refuses a hard-linked file named directly; a walk must skip it too.
        root, runtime = tree_runtime
        assert os.stat(root / "ws/hard_secret").st_nlink == 2
        result = await runtime.execute("file_search", {"path": "/workspace", "query": SECRET[:8]})
        assert not result.is_error, result.output_text
        assert SECRET not in result.output_text

    @pytest.mark.anyio
    async def test_symlink_swapped_during_reads(self, tree_runtime: tuple[Path, Runtime]) -> None:
        """Every read while ``race`` flips between a file and a link out is safe; then, with
        the name pinned to a link to the harmless file, the same read works."""
        root, runtime = tree_runtime
        refusals = (
            "symlink with an absolute target",  # the check saw the link
            "changed while it was being checked",  # the check saw it change
            "is not readable here",  # the guest met the link WASI will not follow
        )
        with flipping_symlink(root):
            for _ in range(300):
                result = await runtime.execute("file_read", {"path": "race"})
                assert SECRET not in result.output_text
                if result.error is None:
                    assert result.output_text == "harmless"
                else:
                    message = result.error.message
                    assert any(reason in message for reason in refusals), message
                    assert "writable" not in message
        (root / "ws/harmless.txt").write_text("harmless")
        (root / "ws/race").unlink()
        (root / "ws/race").symlink_to("harmless.txt")
        result = await runtime.execute("file_read", {"path": "race"})
        assert result.error is None, result.output_text
        assert result.output_text == "harmless"
