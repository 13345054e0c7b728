"""The operator config: defaults, and errors that name their key."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolcage.policies import ConfigError, ToolcageConfig, load_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "toolcage.toml"
    path.write_text(text)
    return path


class TestLoadConfig:
    def test_no_file_gives_defaults(self) -> None:
        config = load_config(None)
        assert config.limits.truncate_bytes == 16 * 1024
        assert isinstance(config, ToolcageConfig)

    def test_values_are_read_and_base_dir_is_the_file_dir(self, tmp_path: Path) -> None:
        config = load_config(
            write(tmp_path, "[limits]\ntruncate_bytes = 100\n[tools.file_read]\ntimeout = 2.5\n")
        )
        assert config.limits.truncate_bytes == 100
        assert config.tools["file_read"].timeout == 2.5
        assert config.base_dir == tmp_path.resolve()

    def test_unknown_key_is_named(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match=r"limits\.truncate_byte: unknown key"):
            load_config(write(tmp_path, "[limits]\ntruncate_byte = 100\n"))

    def test_bad_value_is_named_with_reason(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError) as info:
            load_config(write(tmp_path, "[limits]\ntruncate_bytes = -1\n"))
        assert "limits.truncate_bytes: Input should be greater than 0 (got -1)" in str(info.value)

    def test_loop_budgets(self, tmp_path: Path) -> None:
        config = load_config(write(tmp_path, "[loop]\nmax_rounds = 4\nmax_cost = 0.5\n"))
        assert (config.loop.max_rounds, config.loop.max_cost) == (4, 0.5)
        assert config.loop.max_validation_retries == 2
        with pytest.raises(ConfigError, match=r"loop\.max_rounds: Input should be greater than 0"):
            load_config(write(tmp_path, "[loop]\nmax_rounds = 0\n"))

    def test_nested_tool_key_path(self, tmp_path: Path) -> None:
        with pytest.raises(
            ConfigError, match=r"tools\.file_read\.timeout: Input should be a valid"
        ):
            load_config(write(tmp_path, '[tools.file_read]\ntimeout = "soon"\n'))

    def test_not_toml(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="not valid TOML"):
            load_config(write(tmp_path, "[limits\n"))

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="no such config file"):
            load_config(tmp_path / "absent.toml")

    def test_base_dir_cannot_be_set_from_the_file(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="base_dir: unknown key"):
            load_config(write(tmp_path, 'base_dir = "/"\n'))
