"""The ``[mounts]`` section and which mounts a tool is granted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toolcage.policies import (
    ConfigError,
    GrantedMount,
    MountError,
    MountPolicy,
    ToolcageConfig,
    load_config,
)


def config_at(tmp_path: Path, text: str) -> ToolcageConfig:
    path = tmp_path / "toolcage.toml"
    path.write_text(text)
    return load_config(path)


class TestMountsConfig:
    def test_no_section_means_the_built_in_default(self) -> None:
        areas = load_config(None).mounts.effective_areas
        assert [a.guest for a in areas] == ["/workspace", "/shared", "/tmp"]

    def test_an_area_is_read(self, tmp_path: Path) -> None:
        config = config_at(
            tmp_path,
            '[[mounts.areas]]\nhost = "data"\nguest = "/data"\n'
            'tiers = { read_only = "ro" }\ntools = { file_write = "rw" }\n',
        )
        (area,) = config.mounts.effective_areas
        assert area.guest == "/data"
        assert area.tiers == {"read_only": "ro"}
        assert area.tools == {"file_write": "rw"}

    @pytest.mark.parametrize(
        ("guest", "reason"),
        [
            ("data", "must be absolute"),
            ("/", "would hide every other mount"),
            ("/data/", "not normalised"),
            ("/data//x", "not normalised"),
            ("/data/./x", "not normalised"),
            ("/data/../etc", "not normalised"),
            ("/da ta", "may only use"),
            ("/da\\ta", "may only use"),
        ],
    )
    def test_a_bad_guest_path_is_named(self, tmp_path: Path, guest: str, reason: str) -> None:
        text = f'[[mounts.areas]]\nhost = "d"\nguest = {json.dumps(guest)}\n'
        with pytest.raises(ConfigError, match=r"mounts\.areas\.0\.guest: .*" + reason):
            config_at(tmp_path, text + 'tiers = { read_only = "ro" }\n')

    def test_duplicate_guest_paths_are_refused(self, tmp_path: Path) -> None:
        area = '[[mounts.areas]]\nhost = "{h}"\nguest = "/data"\ntiers = {{ read_only = "ro" }}\n'
        with pytest.raises(ConfigError, match=r"areas\.1\.guest: /data is already mounted"):
            config_at(tmp_path, area.format(h="a") + area.format(h="b"))

    def test_nested_guest_paths_are_refused(self, tmp_path: Path) -> None:
        text = (
            '[[mounts.areas]]\nhost = "a"\nguest = "/data"\ntiers = { read_only = "ro" }\n'
            '[[mounts.areas]]\nhost = "b"\nguest = "/data/inner"\ntiers = { read_only = "ro" }\n'
        )
        with pytest.raises(ConfigError, match=r"/data/inner nests with /data .*ambiguous"):
            config_at(tmp_path, text)

    def test_unknown_tier_and_mode_are_named(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match=r"mounts\.areas\.0\.tiers\.readonly"):
            config_at(
                tmp_path,
                '[[mounts.areas]]\nhost = "a"\nguest = "/a"\ntiers = { readonly = "ro" }\n',
            )
        with pytest.raises(ConfigError, match=r"mounts\.areas\.0\.tools\.file_read"):
            config_at(
                tmp_path,
                '[[mounts.areas]]\nhost = "a"\nguest = "/a"\ntools = { file_read = "w" }\n',
            )

    def test_an_area_granting_nothing_is_refused(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="grants no tier or tool"):
            config_at(tmp_path, '[[mounts.areas]]\nhost = "a"\nguest = "/a"\n')

    def test_unknown_key_is_named(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match=r"mounts\.areas\.0\.mode: unknown key"):
            config_at(
                tmp_path,
                '[[mounts.areas]]\nhost = "a"\nguest = "/a"\nmode = "ro"\n'
                'tiers = { read_only = "ro" }\n',
            )


class TestMountPolicy:
    def test_default_creates_its_directories_on_first_use(self, tmp_path: Path) -> None:
        policy = MountPolicy.from_config(ToolcageConfig(base_dir=tmp_path))
        assert not (tmp_path / "workspace").exists()  # loading does not touch the disk
        mounts = policy.mounts_for("file_write", "side_effecting")
        assert mounts == (
            GrantedMount(tmp_path.resolve() / ".toolcage/shared", "/shared", True),
            GrantedMount(tmp_path.resolve() / ".toolcage/tmp", "/tmp", True),
            GrantedMount(tmp_path.resolve() / "workspace", "/workspace", True),
        )
        assert all(m.host.is_dir() for m in mounts)

    def test_read_only_tier_gets_read_only_mounts(self, tmp_path: Path) -> None:
        policy = MountPolicy.from_config(ToolcageConfig(base_dir=tmp_path))
        mounts = policy.mounts_for("file_read", "read_only")
        assert len(mounts) == 3
        assert not any(m.writable for m in mounts)

    def test_read_only_tier_never_writes_even_when_granted_rw(self, tmp_path: Path) -> None:
        (tmp_path / "a").mkdir()
        config = config_at(
            tmp_path,
            '[[mounts.areas]]\nhost = "a"\nguest = "/a"\n'
            'tiers = { read_only = "rw" }\ntools = { file_read = "rw" }\n',
        )
        (mount,) = MountPolicy.from_config(config).mounts_for("file_read", "read_only")
        assert mount.writable is False

    def test_default_deny_and_tool_grants_beat_tier_grants(self, tmp_path: Path) -> None:
        (tmp_path / "a").mkdir()
        config = config_at(
            tmp_path,
            '[[mounts.areas]]\nhost = "a"\nguest = "/a"\n'
            'tiers = { side_effecting = "ro" }\ntools = { file_write = "rw" }\n',
        )
        policy = MountPolicy.from_config(config)
        assert policy.mounts_for("file_read", "read_only") == ()
        assert policy.mounts_for("file_delete", "side_effecting")[0].writable is False
        assert policy.mounts_for("file_write", "side_effecting")[0].writable is True
        assert policy.mounts_for("shell_exec", "privileged") == ()

    def test_missing_host_directory_is_named(self, tmp_path: Path) -> None:
        config = config_at(
            tmp_path,
            '[[mounts.areas]]\nhost = "nope"\nguest = "/a"\ntiers = { read_only = "ro" }\n',
        )
        with pytest.raises(MountError, match=r"mounts\.areas\.0\.host \(/a\): .*does not exist"):
            MountPolicy.from_config(config).mounts_for("file_read", "read_only")

    def test_nested_host_directories_are_refused(self, tmp_path: Path) -> None:
        (tmp_path / "a" / "b").mkdir(parents=True)
        config = config_at(
            tmp_path,
            '[[mounts.areas]]\nhost = "a"\nguest = "/a"\ntiers = { read_only = "rw" }\n'
            '[[mounts.areas]]\nhost = "a/b"\nguest = "/b"\ntiers = { read_only = "ro" }\n',
        )
        with pytest.raises(MountError, match=r"mounts\.areas\.1\.host \(/b\): .* overlaps"):
            MountPolicy.from_config(config).mounts_for("file_read", "read_only")

    def test_host_paths_resolve_against_the_config_dir(self, tmp_path: Path) -> None:
        (tmp_path / "real").mkdir()
        (tmp_path / "link").symlink_to("real")
        config = config_at(
            tmp_path,
            '[[mounts.areas]]\nhost = "link"\nguest = "/a"\ntiers = { read_only = "ro" }\n',
        )
        (mount,) = MountPolicy.from_config(config).mounts_for("x", "read_only")
        assert mount.host == (tmp_path / "real").resolve()
