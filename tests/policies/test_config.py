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


class TestLoadConfigBounds:
    @pytest.mark.parametrize("depth", [1000, 100_000])
    def test_deeply_nested_values_are_a_config_error(self, tmp_path: Path, depth: int) -> None:
        for text in (
            "a = " + "[" * depth + "]" * depth,
            "a = " + "{b = " * depth + "1" + "}" * depth,
        ):
            with pytest.raises(ConfigError, match="nested too deeply"):
                load_config(write(tmp_path, text))

    def test_deeply_nested_tables_name_where(self, tmp_path: Path) -> None:
        text = "[limits." + ".".join(["x"] * 30) + "]\n"
        with pytest.raises(ConfigError, match=r"limits\.x\.x.*: nested more than 16 levels deep"):
            load_config(write(tmp_path, text))

    def test_a_long_bad_value_is_shown_cut(self, tmp_path: Path) -> None:
        text = f'[limits]\ntruncate_bytes = "{"9x" * 50_000}"\n'
        with pytest.raises(ConfigError) as info:
            load_config(write(tmp_path, text))
        assert len(str(info.value)) < 400

    def test_many_problems_are_counted_not_all_listed(self, tmp_path: Path) -> None:
        text = "".join(f"key{n} = 1\n" for n in range(5000))
        with pytest.raises(ConfigError) as info:
            load_config(write(tmp_path, text))
        assert str(info.value).endswith("; and 4990 more")
        assert str(info.value).count("unknown key") == 10

    def test_load_config_does_not_look_at_the_filesystem(self, tmp_path: Path) -> None:
        text = '[[mounts.areas]]\nhost = "absent"\nguest = "/a"\ntiers = { read_only = "ro" }\n'
        config = load_config(write(tmp_path, text))
        assert config.mounts.areas[0].host == Path("absent")


class TestSchedulerService:
    def test_defaults_and_values(self, tmp_path: Path) -> None:
        default = load_config(None).scheduler
        assert (default.lease_secs, default.poll_secs, default.max_concurrent_runs) == (60, 1, 4)
        text = "[scheduler]\nlease_secs = 90\npoll_secs = 0.5\nmax_concurrent_runs = 16\n"
        config = load_config(write(tmp_path, text)).scheduler
        assert (config.lease_secs, config.poll_secs, config.max_concurrent_runs) == (90, 0.5, 16)

    @pytest.mark.parametrize(
        ("line", "message"),
        [
            ("lease_secs = 5", r"scheduler\.lease_secs: .* greater than or equal to 30 \(got 5\)"),
            (
                "lease_secs = 100000",
                r"scheduler\.lease_secs: .* less than or equal to 86400 \(got 100000\)",
            ),
            ("poll_secs = 0", r"scheduler\.poll_secs: .* greater than or equal to 0\.05 \(got 0\)"),
            (
                "max_concurrent_runs = 0",
                r"scheduler\.max_concurrent_runs: .* greater than or equal to 1 \(got 0\)",
            ),
            (
                "max_concurrent_runs = 1000",
                r"scheduler\.max_concurrent_runs: .* less than or equal to 256 \(got 1000\)",
            ),
        ],
    )
    def test_out_of_range_names_key_limit_and_value(
        self, tmp_path: Path, line: str, message: str
    ) -> None:
        with pytest.raises(ConfigError, match=message):
            load_config(write(tmp_path, f"[scheduler]\n{line}\n"))
