"""The ``[mounts]`` section and :class:`MountPolicy`: which host directories a tool sees.

A guest tool sees nothing of the host but its mounts: host directories preopened at guest
paths. Access is denied by default; each area names the tiers and tools it is granted to
and in which mode::

    [[mounts.areas]]
    host = "data"                                   # relative to the config file
    guest = "/data"                                 # absolute, normalised
    tiers = { read_only = "ro", side_effecting = "rw" }
    tools = { file_search = "ro" }                  # a tool's own grant beats its tier's
    create = true                                   # make the host directory if missing

With no ``areas`` the built-in default applies: ``./workspace`` at ``/workspace`` plus
``/shared`` and ``/tmp`` areas under ``./.toolcage/``, created on first use; read-only tools
get them read-only, the others read-write. A tool of the ``read_only`` tier never gets a
writable mount, whatever the config says.

Guest paths may neither repeat nor nest (``/data`` and ``/data/x`` would make a path's mount
ambiguous), nor may host directories, once resolved: a read-only mount inside a writable
one could be written through the other, and a host path must map back to one guest path.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

if TYPE_CHECKING:
    from ._config import ToolcageConfig

TierName = Literal["read_only", "side_effecting", "privileged"]
MountMode = Literal["ro", "rw"]

_COMPONENT = re.compile(r"^[A-Za-z0-9._+-]+$")
_TOOL_NAME = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")


class MountError(ValueError):
    """A mount's host directory is missing, not a directory, or overlaps another mount."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MountArea(_Section):
    """One host directory and who may see it at which guest path."""

    host: Path
    """Host directory; relative paths resolve against the config file's directory."""
    guest: str
    """Absolute, normalised guest path: ``/data`` (not ``/``, no ``.``, ``..`` or ``//``)."""
    tiers: dict[TierName, MountMode] = {}
    """Mode granted to every tool of a safety tier."""
    tools: dict[str, MountMode] = {}
    """Mode granted to a tool by name; takes precedence over its tier's grant."""
    create: bool = False
    """Create the host directory (and its parents) on first use if it is missing."""

    @field_validator("guest")
    @classmethod
    def _guest_is_normalised(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"guest path {value!r} must be absolute (start with '/')")
        if value == "/":
            raise ValueError("guest path '/' would hide every other mount; name a directory")
        parts = value[1:].split("/")
        for part in parts:
            if part in ("", ".", ".."):
                raise ValueError(
                    f"guest path {value!r} is not normalised (empty, '.' or '..' component)"
                )
            if not _COMPONENT.match(part):
                raise ValueError(
                    f"guest path {value!r}: component {part!r} may only use "
                    "letters, digits, '.', '_', '+' and '-'"
                )
        return value

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, value: dict[str, MountMode]) -> dict[str, MountMode]:
        for name in value:
            if not _TOOL_NAME.match(name):
                raise ValueError(f"{name!r} is not a tool name (snake_case)")
        return value

    @model_validator(mode="after")
    def _grants_something(self) -> MountArea:
        if not self.tiers and not self.tools:
            raise ValueError(f"mount {self.guest} grants no tier or tool (add tiers or tools)")
        return self

    def mode_for(self, tool_name: str, tier: str) -> MountMode | None:
        """The mode this area grants a tool, or ``None`` when it is not granted."""
        if tool_name in self.tools:
            return self.tools[tool_name]
        for tier_name, mode in self.tiers.items():
            if tier_name == tier:
                return mode
        return None


_DEFAULT_TIERS: dict[TierName, MountMode] = {
    "read_only": "ro",
    "side_effecting": "rw",
    "privileged": "rw",
}

_GUEST_TMP = "/tmp"  # noqa: S108 (a guest path; on the host it is ./.toolcage/tmp)

DEFAULT_AREAS: tuple[MountArea, ...] = (
    MountArea(host=Path("workspace"), guest="/workspace", tiers=_DEFAULT_TIERS, create=True),
    MountArea(host=Path(".toolcage/shared"), guest="/shared", tiers=_DEFAULT_TIERS, create=True),
    MountArea(host=Path(".toolcage/tmp"), guest=_GUEST_TMP, tiers=_DEFAULT_TIERS, create=True),
)
"""The built-in mounts, used when the config names no ``areas``."""


class MountsConfig(_Section):
    """The ``[mounts]`` section (see the module docstring)."""

    areas: tuple[MountArea, ...] = Field(default=())
    """The mounts; none at all means the built-in default (``DEFAULT_AREAS``)."""

    @model_validator(mode="after")
    def _no_duplicates_or_nesting(self) -> MountsConfig:
        seen: list[tuple[int, PurePosixPath]] = []
        for index, area in enumerate(self.areas):
            guest = PurePosixPath(area.guest)
            for other_index, other in seen:
                if guest == other:
                    raise ValueError(
                        f"areas.{index}.guest: {area.guest} is already mounted by "
                        f"areas.{other_index}"
                    )
                if guest.is_relative_to(other) or other.is_relative_to(guest):
                    raise ValueError(
                        f"areas.{index}.guest: {area.guest} nests with {other} "
                        f"(areas.{other_index}); which mount a path is in would be ambiguous"
                    )
            seen.append((index, guest))
        return self

    @property
    def effective_areas(self) -> tuple[MountArea, ...]:
        """The configured areas, or the built-in default when there are none."""
        return self.areas or DEFAULT_AREAS


@dataclass(frozen=True, slots=True)
class GrantedMount:
    """A mount as granted to one tool."""

    host: Path
    """Absolute, resolved host directory."""
    guest: str
    """Absolute POSIX guest path it appears at."""
    writable: bool
    """Whether the tool may modify anything under it."""


class MountPolicy:
    """Decides which mounts a tool gets.

    ::

        policy = MountPolicy.from_config(config)
        policy.mounts_for("file_read", "read_only")
        # (GrantedMount(host=PosixPath('/srv/app/workspace'), guest='/workspace',
        #               writable=False), ...)

    Host directories are resolved (and created, where the area says so) on first use, not
    when the config is read, so loading a config never touches the filesystem.
    """

    def __init__(self, areas: tuple[MountArea, ...], base_dir: Path) -> None:
        self._areas = areas
        self._base_dir = base_dir
        self._hosts: tuple[Path, ...] | None = None
        self._lock = threading.Lock()
        self._granted: dict[tuple[str, str], tuple[GrantedMount, ...]] = {}

    @classmethod
    def from_config(cls, config: ToolcageConfig) -> MountPolicy:
        """The policy of ``config.mounts``, with host paths relative to ``config.base_dir``."""
        return cls(config.mounts.effective_areas, config.base_dir)

    @property
    def guest_roots(self) -> tuple[str, ...]:
        """Every guest path some tool may be granted."""
        return tuple(area.guest for area in self._areas)

    def mounts_for(self, tool_name: str, tier: str) -> tuple[GrantedMount, ...]:
        """The mounts ``tool_name`` of safety tier ``tier`` (a tier *value*) gets, by guest path.

        Raises :class:`MountError` when a host directory is missing or overlaps another.
        """
        key = (tool_name, tier)
        granted = self._granted.get(key)
        if granted is not None:
            return granted
        hosts = self._resolved_hosts()
        mounts = []
        for area, host in zip(self._areas, hosts, strict=True):
            mode = area.mode_for(tool_name, tier)
            if mode is None:
                continue
            writable = mode == "rw" and tier != "read_only"
            mounts.append(GrantedMount(host=host, guest=area.guest, writable=writable))
        granted = tuple(sorted(mounts, key=lambda m: m.guest))
        self._granted[key] = granted
        return granted

    def _resolved_hosts(self) -> tuple[Path, ...]:
        with self._lock:
            if self._hosts is None:
                self._hosts = _resolve_hosts(self._areas, self._base_dir)
            return self._hosts


def _resolve_hosts(areas: tuple[MountArea, ...], base_dir: Path) -> tuple[Path, ...]:
    hosts: list[Path] = []
    for index, area in enumerate(areas):
        where = f"mounts.areas.{index}.host ({area.guest})"
        path = (base_dir / area.host).resolve()
        if not path.exists() and area.create:
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise MountError(f"{where}: cannot create {path}: {exc}") from exc
            path = path.resolve()
        if not path.is_dir():
            missing = "does not exist" if not path.exists() else "is not a directory"
            raise MountError(f"{where}: {path} {missing} (create it, or set create = true)")
        for other_index, other in enumerate(hosts):
            if path == other or path.is_relative_to(other) or other.is_relative_to(path):
                raise MountError(
                    f"{where}: {path} overlaps {other} (mounts.areas.{other_index}); "
                    "a host directory may be mounted only once and not inside another"
                )
        hosts.append(path)
    return tuple(hosts)


def describe_roots(mounts: tuple[GrantedMount, ...]) -> str:
    """``/workspace (read-write), /shared (read-only)`` -- for error messages."""
    text = ", ".join(f"{m.guest} ({'read-write' if m.writable else 'read-only'})" for m in mounts)
    return text or "none (no mount is granted to this tool)"
