"""The scratch world a selftest attacks: the operator's config, every host path swapped.

The selftest never touches the operator's files. :func:`scratch_config` keeps every rule
of the config (tiers and tool grants of each mount, the shell allowlist and syntax, the
egress rules, secret bindings, agent profiles) and moves every host path it names into a
fresh temporary directory: each mount area gets an empty directory of its own (with the
area's ``{user}``/``{agent}`` placeholders kept), the shell workspace follows the area it
was, the state store, the vault and each secret's value (a canary, never the real one)
live there too. ``outside/`` beside the mounts holds the canary no path may reach. The
config's MCP servers are not started, its audit log is not written, and its rate limits
are lifted (an attack refused for its rate would say nothing about the rules).
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from toolcage.policies import ToolcageConfig
from toolcage.policies._host_template import HostTemplate
from toolcage.policies._mount_areas import MountArea

from .._tool import DEFAULT_CONTEXT

REMOTE_STATE = ("libsql://", "http://", "https://", "ws://", "wss://")


@dataclass(frozen=True, slots=True)
class ScratchMount:
    """One area of the operator's config and its scratch stand-in."""

    index: int
    """Its index in ``mounts.areas`` (``-1`` for the built-in default areas)."""
    area: MountArea
    """The operator's area."""
    original: HostTemplate
    """The operator's host directory, absolute."""
    scratch: Path
    """The scratch directory the default principal's calls see."""

    @property
    def key(self) -> str:
        return (
            f"mounts.areas.{self.index}"
            if self.index >= 0
            else f"mounts (default {self.area.guest})"
        )


@dataclass(slots=True)
class Scratch:
    """A temporary directory, the config pointed into it, and its canary."""

    root: Path
    config: ToolcageConfig
    mounts: tuple[ScratchMount, ...]
    canary: str
    """The text of ``outside/secret.txt``; seen in any output, it escaped."""
    secret_values: dict[str, str]
    """Each secret's canary value, by name."""

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def scratch_config(config: ToolcageConfig) -> Scratch:
    """A scratch world for ``config`` (see the module docstring); the caller removes it."""
    root = Path(tempfile.mkdtemp(prefix="toolcage-selftest-")).resolve()
    canary = "SELFTEST-CANARY-" + secrets.token_hex(8)
    (root / "outside").mkdir()
    (root / "outside" / "secret.txt").write_text(canary)
    base = config.base_dir
    areas = config.mounts.areas
    mounts: list[ScratchMount] = []
    new_areas: list[MountArea] = []
    for i, area in enumerate(config.mounts.effective_areas):
        original = HostTemplate.parse(area.host).absolute(base)
        fixed = root / "mounts" / str(i)
        host = Path("/".join([str(fixed), *map(str, original.below)]))
        new_areas.append(area.model_copy(update={"host": host, "create": True}))
        template = HostTemplate.parse(host)
        here = template.path(template.segments(DEFAULT_CONTEXT.principal))
        here.mkdir(parents=True, exist_ok=True)
        mounts.append(ScratchMount(i if areas else -1, area, original, here))
    shell_template = config.shell.workspace_template(base)
    # a workspace of its own keeps its placeholders: shared stays shared, per user per user
    workspace = Path("/".join([str(root / "shell"), *map(str, shell_template.below)]))
    for mount, new in zip(mounts, new_areas, strict=True):
        if mount.original == shell_template:
            workspace = new.host
    update: dict[str, object] = {
        "mounts": config.mounts.model_copy(update={"areas": tuple(new_areas)}),
        "shell": config.shell.model_copy(update={"workspace": workspace}),
        "audit": config.audit.model_copy(update={"path": None}),
        "mcp": config.mcp.model_copy(update={"servers": ()}),
        "rate_limits": {},
    }
    state = config.state
    if state.url is not None and state.url.startswith(REMOTE_STATE):
        update["state"] = state.model_copy(update={"enabled": False})
    else:
        vault = state.vault
        if vault.dir is not None:
            (root / "vault").mkdir()
            vault = vault.model_copy(update={"dir": root / "vault"})
        update["state"] = state.model_copy(
            update={"url": str(root / "state" / "state.db"), "vault": vault}
        )
        (root / "state").mkdir()
    values: dict[str, str] = {}
    if config.secrets:
        (root / "secrets").mkdir(mode=0o700)
        moved = {}
        for name, secret in config.secrets.items():
            values[name] = f"selftest-{name}-" + secrets.token_hex(8)
            path = root / "secrets" / name
            path.write_text(values[name])
            os.chmod(path, 0o600)
            moved[name] = secret.model_copy(update={"from_env": None, "from_file": path})
        update["secrets"] = moved
    return Scratch(root, config.model_copy(update=update), tuple(mounts), canary, values)
