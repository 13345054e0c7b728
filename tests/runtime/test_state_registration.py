"""The state tools exist while ``[state]`` is enabled, and the store a runtime builds from
its config is checked against the mounts, opened on first use and kept across runtimes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toolcage.policies import ConfigError
from toolcage.runtime import Runtime, ToolExecutionContext

from .cli.test_cli import check_lines, toolcage

STATE_TOOLS = {
    "memory_search": "read_only",
    "memory_save": "side_effecting",
    "memory_update": "side_effecting",
    "memory_delete": "side_effecting",
    "scratchpad_read": "read_only",
    "scratchpad_write": "side_effecting",
    "scratchpad_clear": "side_effecting",
    "vault_copyto": "side_effecting",
}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "toolcage.toml"
    path.write_text(text)
    return path


class TestRegistration:
    def test_enabled_by_default(self, tmp_path: Path) -> None:
        runtime = Runtime.from_config(write(tmp_path, ""))
        tiers = {row.name: row.safety_tier.value for row in runtime.registry.listing()}
        assert {name: tiers.get(name) for name in STATE_TOOLS} == STATE_TOOLS

    def test_disabled_removes_them(self, tmp_path: Path) -> None:
        runtime = Runtime.from_config(write(tmp_path, "[state]\nenabled = false\n"))
        assert not set(STATE_TOOLS) & {row.name for row in runtime.registry.listing()}
        assert "file_read" in runtime.registry

    def test_listed_by_the_cli(self, tmp_path: Path) -> None:
        done = toolcage("tools", "--json", "--config", str(write(tmp_path, "")))
        assert done.returncode == 0, done.stderr
        listed = {tool["name"]: tool for tool in json.loads(done.stdout)}
        assert listed["memory_search"]["needs"] == ["memory"]
        assert listed["vault_copyto"]["needs"] == ["vault"]
        done = toolcage("tools", "--config", str(write(tmp_path, "[state]\nenabled = false\n")))
        assert done.returncode == 0, done.stderr
        assert "memory_" not in done.stdout

    def test_a_cli_call_saves_to_the_embedded_store(self, tmp_path: Path) -> None:
        config = str(write(tmp_path, ""))
        arguments = json.dumps({"content": "the build runs on Fridays"})
        done = toolcage("call", "memory_save", arguments, "--config", config)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / ".toolcage/state.db").is_file()
        done = toolcage("call", "memory_search", '{"query": "build"}', "--config", config)
        envelope = json.loads(done.stdout)
        assert envelope["status"] == "success", envelope
        hits = json.loads(envelope["result"].split("\n")[0])
        assert [hit["text"] for hit in hits] == ["the build runs on Fridays"]


class TestStoreLifetime:
    @pytest.mark.anyio
    async def test_opened_on_first_use_and_kept_across_runtimes(self, tmp_path: Path) -> None:
        path = write(tmp_path, '[state]\nurl = "db/state.db"\n')
        ctx = ToolExecutionContext(user_id="ada")
        async with Runtime.from_config(path) as runtime:
            assert not (tmp_path / "db").exists()
            saved = await runtime.execute("memory_save", {"content": "likes rye bread"}, ctx)
            assert not saved.is_error, saved.output_text
        async with Runtime.from_config(path) as runtime:
            found = await runtime.execute("memory_search", {"query": "bread"}, ctx)
        hits = json.loads(found.output_text.split("\n")[0])
        assert [hit["note_id"] for hit in hits] == [json.loads(saved.output_text)["note_id"]]

    @pytest.mark.anyio
    async def test_a_store_that_cannot_be_opened_names_its_url(self, tmp_path: Path) -> None:
        (tmp_path / "blocker").write_text("a file where the directory should be")
        path = write(tmp_path, '[state]\nurl = "blocker/state.db"\n')
        async with Runtime.from_config(path) as runtime:
            result = await runtime.execute("scratchpad_read", {})
        assert result.error is not None
        assert result.error.kind.value == "execution_error"
        assert "blocker/state.db" in result.error.message


class TestChecks:
    """What only the runtime can check: the vault and the store stay out of every mount."""

    def test_a_mounted_vault_is_refused(self, tmp_path: Path) -> None:
        (tmp_path / "workspace/keys").mkdir(parents=True)
        path = write(tmp_path, '[state.vault]\ndir = "workspace/keys"\n')
        with pytest.raises(ConfigError, match=r"state\.vault\.dir: .* overlaps the mounted"):
            Runtime.from_config(path)

    def test_a_vault_holding_a_mount_is_refused(self, tmp_path: Path) -> None:
        path = write(tmp_path, '[state.vault]\ndir = "."\n')
        with pytest.raises(ConfigError, match=r"state\.vault\.dir: .* overlaps the mounted"):
            Runtime.from_config(path)

    def test_a_missing_vault_is_refused(self, tmp_path: Path) -> None:
        path = write(tmp_path, '[state.vault]\ndir = "nowhere"\n')
        with pytest.raises(ConfigError, match=r"state\.vault\.dir: .*nowhere is not a directory"):
            Runtime.from_config(path)

    def test_a_store_inside_a_mount_is_refused(self, tmp_path: Path) -> None:
        path = write(tmp_path, '[state]\nurl = "workspace/state.db"\n')
        with pytest.raises(ConfigError, match=r"state\.url: .* is inside the mounted"):
            Runtime.from_config(path)

    def test_an_unset_secret_variable_is_refused(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("TC_TEST_EMBED_KEY", raising=False)
        text = (
            '[state.embedder]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
            'model = "m"\ndimensions = 8\napi_key_env = "TC_TEST_EMBED_KEY"\n'
        )
        path = write(tmp_path, text)
        with pytest.raises(ConfigError, match=r"state\.embedder\.api_key_env: .*TC_TEST_EMBED_KEY"):
            Runtime.from_config(path)

    def test_a_disabled_store_is_not_checked(self, tmp_path: Path) -> None:
        path = write(tmp_path, '[state]\nenabled = false\nurl = "workspace/state.db"\n')
        Runtime.from_config(path)


class TestSetupCheck:
    def test_the_store_opens_and_is_described(self, tmp_path: Path) -> None:
        text = '[state.embedder]\nkind = "hash"\n[shell]\nmode = "disabled"\n'
        lines = check_lines(toolcage("check", "--config", str(write(tmp_path, text))))
        assert lines["state"].startswith("ok ")
        assert "hybrid search (hash-384); no vault" in lines["state"]
        assert (tmp_path / ".toolcage/state.db").is_file()

    def test_a_store_that_cannot_open_fails(self, tmp_path: Path) -> None:
        (tmp_path / "blocker").write_text("")
        text = '[state]\nurl = "blocker/x.db"\n[shell]\nmode = "disabled"\n'
        done = toolcage("check", "--config", str(write(tmp_path, text)))
        assert check_lines(done)["state"].startswith("FAIL")
        assert done.returncode == 1

    def test_a_disabled_store_is_skipped(self, tmp_path: Path) -> None:
        text = '[state]\nenabled = false\n[shell]\nmode = "disabled"\n'
        lines = check_lines(toolcage("check", "--config", str(write(tmp_path, text))))
        assert lines["state"].startswith("skip")
