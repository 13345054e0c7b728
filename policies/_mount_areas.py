"""The ``[mounts]`` section: which host directories are mounted where, and for whom.

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
get them read-only, the others read-write.

This module is the config's half: it validates what can be judged from the text alone
(guest paths neither repeat nor nest). Resolving the host directories, and refusing hosts
that overlap once resolved, is :mod:`._mounts`' :class:`~._mounts.MountPolicy`, built from a
whole config; keeping the two apart lets the config import this module without importing
the policy back.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ._host_template import HostTemplate

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
    """Host directory; relative paths resolve against the config file's directory. It may
    name the principal with ``{user}`` and ``{agent}`` (:mod:`._host_template`)."""
    guest: str
    """Absolute, normalised guest path: ``/data`` (not ``/``, no ``.``, ``..`` or ``//``)."""
    tiers: dict[TierName, MountMode] = {}
    """Mode granted to every tool of a safety tier."""
    tools: dict[str, MountMode] = {}
    """Mode granted to a tool by name; takes precedence over its tier's grant."""
    create: bool = False
    """Create the host directory (and its parents) on first use if it is missing; for a
    host naming the principal, each principal's directory on its first call (mode 0700)."""

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

    @field_validator("host")
    @classmethod
    def _host_template(cls, value: Path) -> Path:
        HostTemplate.parse(value)  # raises ValueError saying what is wrong
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


def overlap_message(host: HostTemplate, other: HostTemplate, other_index: int) -> str:
    """Why two areas' hosts cannot both be mounted."""
    if not host.per_principal and not other.per_principal:
        return (
            f"{host} overlaps {other} (mounts.areas.{other_index}); a host directory may be "
            "mounted only once and not inside another"
        )
    return (
        f"{host} may be the same directory as {other} (mounts.areas.{other_index}), or hold it "
        "or lie inside it, for some user or agent; give each area a fixed directory of its "
        "own above its placeholders (such as users/{user} and shared/)"
    )
