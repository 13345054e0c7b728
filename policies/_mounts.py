""":class:`MountPolicy`: which host directories a tool sees, and where.

The ``[mounts]`` section itself (:class:`~._mount_areas.MountArea`,
:class:`~._mount_areas.MountsConfig`) is :mod:`._mount_areas`; this module turns its
areas into the mounts granted to one tool of one principal. A tool of the ``read_only``
tier never gets a writable mount, whatever the config says.

Guest paths may neither repeat nor nest (``/data`` and ``/data/x`` would make a path's mount
ambiguous), nor may host directories, once resolved: a read-only mount inside a writable
one could be written through the other, and a host path must map back to one guest path.

A host path may name the principal: ``host = "users/{user}/workspace"`` gives each user a
directory of their own (``{agent}``: each agent profile; both: each user's agent), made
beneath the fixed parent ``users/`` on the user's first call when ``create`` is set
(:mod:`._host_template` says how, and which ids become which names). Two areas whose
directories could coincide or nest for *some* principals are refused like overlapping
ones: ``users/{user}`` beside ``users/shared`` would be user ``shared``'s directory. An
area without a placeholder is one directory for every user of the runtime, as it always
was.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING

from ._host_template import (
    PLACEHOLDERS,
    HostTemplate,
    may_overlap,
    owner_segments,
    reach,
)
from ._mount_areas import MountArea, MountError, overlap_message
from ._principal import Principal

if TYPE_CHECKING:
    from ._config import ToolcageConfig


@dataclass(frozen=True, slots=True)
class GrantedMount:
    """A mount as granted to one tool."""

    host: Path
    """Absolute, resolved host directory."""
    guest: str
    """Absolute POSIX guest path it appears at."""
    writable: bool
    """Whether the tool may modify anything under it."""


MAX_OWNERS = 256
"""Principals whose directories a :class:`MountPolicy` keeps resolved; the least recently
used beyond this are looked up again when they next call."""


class _Hosts:
    """One owner's host directories (one per area) and the grants made from them."""

    __slots__ = ("granted", "paths")

    def __init__(self, paths: tuple[Path, ...]) -> None:
        self.paths = paths
        self.granted: dict[tuple[str, str], tuple[GrantedMount, ...]] = {}


class MountPolicy:
    """Decides which mounts a tool gets, for the principal of its call.

    ::

        policy = MountPolicy.from_config(config)
        policy.mounts_for("file_read", "read_only", ctx.principal)
        # (GrantedMount(host=PosixPath('/srv/app/workspace'), guest='/workspace',
        #               writable=False), ...)

    Host directories are resolved (and created, where the area says so) on first use, not
    when the config is read, so loading a config never touches the filesystem. An area
    whose host names the principal (``users/{user}``, :mod:`._host_template`) resolves per
    owner -- the user, or the user and agent, its placeholders name -- and the directories
    of the last :data:`MAX_OWNERS` owners are kept, so a call of a known owner costs one
    dictionary lookup more than one of a config that names no principal.
    """

    def __init__(
        self, areas: tuple[MountArea, ...], base_dir: Path, *, max_owners: int = MAX_OWNERS
    ) -> None:
        self._areas = areas
        self._base_dir = base_dir
        self._templates = tuple(HostTemplate.parse(area.host) for area in areas)
        used = {name for template in self._templates for name in template.names}
        self._names = tuple(name for name in PLACEHOLDERS if name in used)
        """The placeholders some area's host holds; none: every principal shares the hosts."""
        self._owner_key = attrgetter(*(f"{name}_id" for name in self._names or PLACEHOLDERS))
        """A principal's owner: the ids of the placeholders used (one id, or a tuple)."""
        self._max_owners = max_owners
        self._lock = threading.Lock()
        self._absolute: tuple[HostTemplate, ...] | None = None
        self._shared: _Hosts | None = None
        self._owners: OrderedDict[object, _Hosts] = OrderedDict()

    @classmethod
    def from_config(cls, config: ToolcageConfig) -> MountPolicy:
        """The policy of ``config.mounts``, with host paths relative to ``config.base_dir``."""
        return cls(config.mounts.effective_areas, config.base_dir)

    @property
    def guest_roots(self) -> tuple[str, ...]:
        """Every guest path some tool may be granted."""
        return tuple(area.guest for area in self._areas)

    @property
    def per_principal(self) -> bool:
        """Whether some area's host names the principal."""
        return bool(self._names)

    def mounts_for(
        self, tool_name: str, tier: str, principal: Principal
    ) -> tuple[GrantedMount, ...]:
        """The mounts ``tool_name`` of safety tier ``tier`` (a tier *value*) gets in a call
        of ``principal``, by guest path.

        Raises :class:`MountError` when a host directory is missing or overlaps another.
        """
        hosts = self._owner_hosts(principal) if self._names else self._shared
        if hosts is None:
            hosts = self._shared_hosts()
        granted = hosts.granted.get((tool_name, tier))
        if granted is None:
            granted = hosts.granted[(tool_name, tier)] = self._grant(tool_name, tier, hosts)
        return granted

    def _grant(self, tool_name: str, tier: str, hosts: _Hosts) -> tuple[GrantedMount, ...]:
        mounts = []
        for area, host in zip(self._areas, hosts.paths, strict=True):
            mode = area.mode_for(tool_name, tier)
            if mode is None:
                continue
            writable = mode == "rw" and tier != "read_only"
            mounts.append(GrantedMount(host=host, guest=area.guest, writable=writable))
        return tuple(sorted(mounts, key=lambda m: m.guest))

    def _shared_hosts(self) -> _Hosts:
        with self._lock:
            if self._shared is None:
                self._shared = _Hosts(tuple(t.fixed for t in self._resolved_templates()))
            return self._shared

    def _owner_hosts(self, principal: Principal) -> _Hosts:
        key = self._owner_key(principal)
        with self._lock:
            hosts = self._owners.get(key)
            if hosts is not None:
                self._owners.move_to_end(key)
                return hosts
            templates = self._resolved_templates()
        # Made outside the lock: two calls making one owner's directories both succeed.
        segments = owner_segments(self._names, (principal.user_id, principal.agent_id))
        paths = tuple(
            _make_below(template, segments, area.create, _where(index, area))
            if template.per_principal
            else template.fixed
            for index, (area, template) in enumerate(zip(self._areas, templates, strict=True))
        )
        with self._lock:
            hosts = self._owners.setdefault(key, _Hosts(paths))
            self._owners.move_to_end(key)
            while len(self._owners) > self._max_owners:
                self._owners.popitem(last=False)
        return hosts

    def _resolved_templates(self) -> tuple[HostTemplate, ...]:
        """The areas' templates with their fixed parents resolved (and made), checked once;
        called with the lock held."""
        if self._absolute is None:
            self._absolute = _resolve_hosts(self._areas, self._templates, self._base_dir)
        return self._absolute


def _where(index: int, area: MountArea) -> str:
    return f"mounts.areas.{index}.host ({area.guest})"


def _resolve_hosts(
    areas: tuple[MountArea, ...], templates: tuple[HostTemplate, ...], base_dir: Path
) -> tuple[HostTemplate, ...]:
    resolved: list[HostTemplate] = []
    for index, (area, template) in enumerate(zip(areas, templates, strict=True)):
        where = _where(index, area)
        absolute = template.absolute(base_dir)
        path = absolute.fixed
        if not path.exists() and area.create:
            try:
                absolute.make_fixed()
            except OSError as exc:
                raise MountError(f"{where}: cannot create {path}: {exc}") from exc
            absolute = HostTemplate(path.resolve(), absolute.below)
            path = absolute.fixed
        if not path.is_dir():
            missing = "does not exist" if not path.exists() else "is not a directory"
            raise MountError(f"{where}: {path} {missing} (create it, or set create = true)")
        for other_index, other in enumerate(resolved):
            if may_overlap(absolute, other):
                raise MountError(f"{where}: {overlap_message(absolute, other, other_index)}")
        resolved.append(absolute)
    return tuple(resolved)


def _make_below(template: HostTemplate, segments: dict[str, str], create: bool, where: str) -> Path:
    """The owner's directory of ``template`` (see :func:`reach`), or :class:`MountError`."""
    try:
        return reach(template, segments, create=create)
    except FileNotFoundError:
        path = template.path(segments)
        raise MountError(
            f"{where}: {path} does not exist (create it, or set create = true)"
        ) from None
    except OSError as exc:
        path = template.path(segments)
        raise MountError(
            f"{where}: cannot reach {path} without following a link: {exc.strerror}"
        ) from None


def describe_roots(mounts: tuple[GrantedMount, ...]) -> str:
    """``/workspace (read-write), /shared (read-only)`` -- for error messages."""
    text = ", ".join(f"{m.guest} ({'read-write' if m.writable else 'read-only'})" for m in mounts)
    return text or "none (no mount is granted to this tool)"
