"""A config that does not fit the runtime built from it is refused, naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolcage.policies import ConfigError, load_config
from toolcage.runtime import Runtime, SafetyTier, tool


@tool(safety_tier=SafetyTier.READ_ONLY)
def lookup(key: str) -> str:
    """Look a key up."""
    return key


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "toolcage.toml"
    path.write_text(text)
    return path


AREA = '[[mounts.areas]]\nhost = "{host}"\nguest = "{guest}"\ntiers = {{ read_only = "ro" }}\n'


class TestToolNames:
    @pytest.mark.parametrize(
        ("text", "where"),
        [
            ("[tools.ghost]\ntimeout = 1\n", "tools.ghost: unknown tool 'ghost'"),
            ('[approval]\nauto_approve = ["ghost"]\n', "approval.auto_approve: unknown tool"),
            ('[agents.bot]\ntools = ["file_read", "ghost"]\n', "agents.bot.tools: unknown tool"),
            (AREA.format(host=".", guest="/data") + "tools = { ghost = \"ro\" }\n",
             "mounts.areas.0.tools.ghost: unknown tool"),
            ("[egress.tools.ghost]\nmax_redirects = 1\n", "egress.tools.ghost: unknown tool"),
            ("[egress.grants]\nghost = []\n", "egress.grants.ghost: unknown tool"),
        ],
        ids=["override", "auto-approve", "agent", "mount-grant", "egress-rules", "egress-grant"],
    )  # fmt: skip
    def test_every_place_a_tool_is_named(self, tmp_path: Path, text: str, where: str) -> None:
        path = write(tmp_path, text)
        load_config(path)  # the file on its own is fine: only the runtime knows its tools
        with pytest.raises(ConfigError, match=rf"^{path}: .*{where}"):
            Runtime.from_config(path)

    def test_host_tools_given_to_from_config_are_known(self, tmp_path: Path) -> None:
        path = write(tmp_path, '[tools.lookup]\ntimeout = 2\n[agents.bot]\ntools = ["lookup"]\n')
        runtime = Runtime.from_config(path, tools=[lookup])
        assert runtime.registry.declarations("bot")[0].name == "lookup"

    def test_a_near_miss_is_suggested_and_every_problem_listed(self, tmp_path: Path) -> None:
        path = write(tmp_path, '[tools.file_raed]\ntimeout = 1\n[approval]\nauto_approve = ["x"]\n')
        with pytest.raises(ConfigError) as info:
            Runtime.from_config(path)
        message = str(info.value)
        assert "tools.file_raed: unknown tool 'file_raed' (did you mean 'file_read'?)" in message
        assert "approval.auto_approve: unknown tool 'x'" in message


class TestMounts:
    def test_a_missing_host_directory_is_refused_at_load(self, tmp_path: Path) -> None:
        path = write(tmp_path, AREA.format(host="data", guest="/data"))
        with pytest.raises(ConfigError) as info:
            Runtime.from_config(path)
        assert (
            f"mounts.areas.0.host: {tmp_path / 'data'} does not exist "
            "(create it, or set create = true)"
        ) in str(info.value)

    def test_create_true_defers_it_to_first_use(self, tmp_path: Path) -> None:
        path = write(tmp_path, AREA.format(host="data", guest="/data") + "create = true\n")
        Runtime.from_config(path)
        assert not (tmp_path / "data").exists()

    def test_a_file_is_not_a_mount(self, tmp_path: Path) -> None:
        (tmp_path / "data").write_text("")
        path = write(tmp_path, AREA.format(host="data", guest="/data"))
        with pytest.raises(ConfigError, match=r"mounts\.areas\.0\.host: .* is not a directory"):
            Runtime.from_config(path)

    def test_host_directories_may_not_nest(self, tmp_path: Path) -> None:
        (tmp_path / "data" / "inner").mkdir(parents=True)
        text = AREA.format(host="data", guest="/data") + AREA.format(host="data/inner", guest="/in")
        with pytest.raises(ConfigError, match=r"mounts\.areas\.1\.host: .* overlaps"):
            Runtime.from_config(write(tmp_path, text))

    def test_the_shell_workspace_must_be_a_directory(self, tmp_path: Path) -> None:
        (tmp_path / "workspace").write_text("")
        text = AREA.format(host=".", guest="/data")
        with pytest.raises(ConfigError, match=r"shell\.workspace: .* is not a directory"):
            Runtime.from_config(write(tmp_path, text))
