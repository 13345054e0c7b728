"""The ``[mounts]`` section and which mounts a tool is granted."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest
from toolcage.policies import (
    ConfigError,
    GrantedMount,
    HostTemplate,
    MountError,
    MountPolicy,
    Principal,
    ToolcageConfig,
    load_config,
)
from toolcage.policies._host_template import may_overlap


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
        mounts = policy.mounts_for("file_write", "side_effecting", Principal())
        assert mounts == (
            GrantedMount(tmp_path.resolve() / ".toolcage/shared", "/shared", True),
            GrantedMount(tmp_path.resolve() / ".toolcage/tmp", "/tmp", True),
            GrantedMount(tmp_path.resolve() / "workspace", "/workspace", True),
        )
        assert all(m.host.is_dir() for m in mounts)

    def test_read_only_tier_gets_read_only_mounts(self, tmp_path: Path) -> None:
        policy = MountPolicy.from_config(ToolcageConfig(base_dir=tmp_path))
        mounts = policy.mounts_for("file_read", "read_only", Principal())
        assert len(mounts) == 3
        assert not any(m.writable for m in mounts)

    def test_read_only_tier_never_writes_even_when_granted_rw(self, tmp_path: Path) -> None:
        (tmp_path / "a").mkdir()
        config = config_at(
            tmp_path,
            '[[mounts.areas]]\nhost = "a"\nguest = "/a"\n'
            'tiers = { read_only = "rw" }\ntools = { file_read = "rw" }\n',
        )
        (mount,) = MountPolicy.from_config(config).mounts_for("file_read", "read_only", Principal())
        assert mount.writable is False

    def test_default_deny_and_tool_grants_beat_tier_grants(self, tmp_path: Path) -> None:
        (tmp_path / "a").mkdir()
        config = config_at(
            tmp_path,
            '[[mounts.areas]]\nhost = "a"\nguest = "/a"\n'
            'tiers = { side_effecting = "ro" }\ntools = { file_write = "rw" }\n',
        )
        policy = MountPolicy.from_config(config)
        assert policy.mounts_for("file_read", "read_only", Principal()) == ()
        assert policy.mounts_for("file_delete", "side_effecting", Principal())[0].writable is False
        assert policy.mounts_for("file_write", "side_effecting", Principal())[0].writable is True
        assert policy.mounts_for("shell_exec", "privileged", Principal()) == ()

    def test_missing_host_directory_is_named(self, tmp_path: Path) -> None:
        config = config_at(
            tmp_path,
            '[[mounts.areas]]\nhost = "nope"\nguest = "/a"\ntiers = { read_only = "ro" }\n',
        )
        with pytest.raises(MountError, match=r"mounts\.areas\.0\.host \(/a\): .*does not exist"):
            MountPolicy.from_config(config).mounts_for("file_read", "read_only", Principal())

    def test_nested_host_directories_are_refused(self, tmp_path: Path) -> None:
        (tmp_path / "a" / "b").mkdir(parents=True)
        config = config_at(
            tmp_path,
            '[[mounts.areas]]\nhost = "a"\nguest = "/a"\ntiers = { read_only = "rw" }\n'
            '[[mounts.areas]]\nhost = "a/b"\nguest = "/b"\ntiers = { read_only = "ro" }\n',
        )
        with pytest.raises(MountError, match=r"mounts\.areas\.1\.host \(/b\): .* overlaps"):
            MountPolicy.from_config(config).mounts_for("file_read", "read_only", Principal())

    def test_host_paths_resolve_against_the_config_dir(self, tmp_path: Path) -> None:
        (tmp_path / "real").mkdir()
        (tmp_path / "link").symlink_to("real")
        config = config_at(
            tmp_path,
            '[[mounts.areas]]\nhost = "link"\nguest = "/a"\ntiers = { read_only = "ro" }\n',
        )
        (mount,) = MountPolicy.from_config(config).mounts_for("x", "read_only", Principal())
        assert mount.host == (tmp_path / "real").resolve()


def principal(user: str, agent: str = "lead") -> Principal:
    return Principal(user_id=user, agent_id=agent)


def area(host: str, guest: str = "/data", create: str = "true") -> str:
    return (
        f'[[mounts.areas]]\nhost = "{host}"\nguest = "{guest}"\n'
        f'tiers = {{ read_only = "ro", side_effecting = "rw" }}\ncreate = {create}\n'
    )


class TestHostTemplate:
    @pytest.mark.parametrize(
        ("host", "reason"),
        [
            ("users/{usr}", "'{usr}' is not a placeholder"),
            ("users/{}", "'{}' is not a placeholder"),
            ("users/{user", "a brace outside"),
            ("users/{user}-{agent}", "holds 2 placeholders"),
            ("users/{user}/../bob", "no empty, '.' or '..' component may follow"),
        ],
    )
    def test_a_bad_placeholder_is_named_with_its_key(
        self, tmp_path: Path, host: str, reason: str
    ) -> None:
        with pytest.raises(ConfigError, match=r"mounts\.areas\.0\.host: .*" + re.escape(reason)):
            config_at(tmp_path, area(host))

    def test_a_host_mode_shell_cannot_name_the_principal(self, tmp_path: Path) -> None:
        text = '[shell]\nmode = "host"\nworkspace = "users/{user}"\n'
        with pytest.raises(ConfigError, match=r"shell\.workspace: .*needs mode = \"sandboxed\""):
            config_at(tmp_path, text)

    def test_the_fixed_parent_is_what_comes_before_the_first_placeholder(self) -> None:
        template = HostTemplate.parse("/srv/users/u-{user}/{agent}/files")
        assert template.fixed == Path("/srv/users")
        assert template.names == ("user", "agent")
        ada = template.segments(principal("../ada", "x/y"))
        assert template.path(ada) == Path("/srv/users/u-%2E%2E%2Fada/x%2Fy/files")
        assert not HostTemplate.parse("/srv/data").per_principal

    @pytest.mark.parametrize(
        ("a", "b", "overlap"),
        [
            ("users/{user}", "users/shared", True),  # a user called "shared"
            ("users/{user}", "users/.hidden", False),  # no id escapes to a dot-name
            ("users/{user}/ws", "users/{user}/tmp", False),
            ("users/{user}/ws", "users/{agent}/ws", True),  # user "lead", agent "lead"
            ("users/{user}", "users/{user}/ws", True),
            ("users/u-{user}", "users/a-{agent}", False),
            ("users/{user}", "users/a-{agent}", True),
            ("users/{user}", "shared", False),
            ("data", "data/sub", True),
        ],
    )
    def test_templates_that_could_meet_for_some_principals_overlap(
        self, a: str, b: str, overlap: bool
    ) -> None:
        base = Path("/srv")
        first, second = (HostTemplate.parse(p).absolute(base) for p in (a, b))
        assert may_overlap(first, second) is overlap
        assert may_overlap(second, first) is overlap


class TestMountPolicyPerPrincipal:
    def test_each_user_gets_a_directory_of_their_own(self, tmp_path: Path) -> None:
        policy = MountPolicy.from_config(config_at(tmp_path, area("users/{user}/data")))
        (ada,) = policy.mounts_for("file_write", "side_effecting", principal("ada"))
        (bob,) = policy.mounts_for("file_write", "side_effecting", principal("bob"))
        assert ada.host == tmp_path / "users/ada/data"
        assert bob.host == tmp_path / "users/bob/data"
        assert ada.host.is_dir()
        assert stat.S_IMODE((tmp_path / "users/ada").stat().st_mode) == 0o700
        # the same user through another agent: the same directory, the cached grant
        again = policy.mounts_for("file_write", "side_effecting", principal("ada", "reviewer"))
        assert again == (ada,)

    def test_agent_names_a_directory_per_agent(self, tmp_path: Path) -> None:
        policy = MountPolicy.from_config(config_at(tmp_path, area("agents/{user}/{agent}")))
        (lead,) = policy.mounts_for("file_read", "read_only", principal("ada", "lead"))
        (other,) = policy.mounts_for("file_read", "read_only", principal("ada", "reviewer"))
        assert lead.host == tmp_path / "agents/ada/lead"
        assert other.host == tmp_path / "agents/ada/reviewer"

    def test_without_create_a_missing_user_directory_is_named(self, tmp_path: Path) -> None:
        (tmp_path / "users/ada").mkdir(parents=True)
        policy = MountPolicy.from_config(config_at(tmp_path, area("users/{user}", create="false")))
        (ada,) = policy.mounts_for("file_read", "read_only", principal("ada"))
        assert ada.host == tmp_path / "users/ada"
        with pytest.raises(MountError, match=r"mounts\.areas\.0\.host .*users/bob does not exist"):
            policy.mounts_for("file_read", "read_only", principal("bob"))

    def test_a_link_in_place_of_a_user_directory_is_refused(self, tmp_path: Path) -> None:
        policy = MountPolicy.from_config(config_at(tmp_path, area("users/{user}")))
        policy.mounts_for("file_read", "read_only", principal("bob"))
        (tmp_path / "users/eve").symlink_to(tmp_path / "users/bob")
        with pytest.raises(MountError, match="without following a link"):
            policy.mounts_for("file_read", "read_only", principal("eve"))

    def test_overlapping_templates_are_refused_on_first_use(self, tmp_path: Path) -> None:
        text = area("users/{user}") + area("users/shared", guest="/shared")
        policy = MountPolicy.from_config(config_at(tmp_path, text))
        with pytest.raises(MountError, match=r"mounts\.areas\.1\.host .*may be the same"):
            policy.mounts_for("file_read", "read_only", principal("ada"))

    def test_the_owners_kept_are_bounded(self, tmp_path: Path) -> None:
        config = config_at(tmp_path, area("users/{user}"))
        policy = MountPolicy(config.mounts.effective_areas, config.base_dir, max_owners=2)
        first = policy.mounts_for("file_read", "read_only", principal("u0"))
        for index in range(1, 5):
            policy.mounts_for("file_read", "read_only", principal(f"u{index}"))
        assert len(policy._owners) == 2
        # an evicted owner is looked up again, to the same directory
        assert policy.mounts_for("file_read", "read_only", principal("u0")) == first

    def test_without_a_placeholder_every_principal_shares_one_grant(self, tmp_path: Path) -> None:
        policy = MountPolicy.from_config(config_at(tmp_path, area("data")))
        ada = policy.mounts_for("file_read", "read_only", principal("ada"))
        assert policy.mounts_for("file_read", "read_only", principal("bob")) is ada
        assert not policy.per_principal
