"""Host paths that name the principal, and the making of the directories they name.

A host serving many users gives each of them directories of their own by writing a
placeholder into a mount's ``host`` or the shell's ``workspace``::

    [[mounts.areas]]
    host = "users/{user}/workspace"     # ada's calls see users/ada/workspace, bob's users/bob/...
    guest = "/workspace"

``{user}`` stands for the call's user, ``{agent}`` for its agent profile. A placeholder is
a whole path component or part of one (``u-{user}``), at most one to a component, and it
is filled only with :func:`~toolcage.policies.path_segment` of the principal's id: a
component of letters, digits, ``-``, ``_``, ``%`` and ``~`` that is never ``.`` or ``..``,
holds no ``/`` and differs from every other id's. No other text in braces is allowed, and
no ``.`` or ``..`` component after the first placeholder.

The path splits into its *fixed parent*, the components before the first placeholder
(the operator's: resolved as given, symbolic links followed), and the components from the
first placeholder on, which :func:`reach` walks one at a time from a descriptor of the
parent, never following a link, making each missing one with ``mkdirat`` (mode ``0700``),
and then checks that the path names the directory it reached: a link planted on the way is
refused, and two principals' calls never meet in one directory, however they race. The
directories on such a path must be out of every tool's reach, so that nothing a model
drives could swap one afterwards: the runtime refuses a mount or a shell workspace naming
the principal that could hold or lie inside another (:func:`may_overlap`).

Two templates *may overlap* (:func:`may_overlap`) when some principals' directories of the
one and the other could be the same directory or one inside the other: compared component
by component, two literal names must be equal, and a placeholder may match any name it
could be filled with (``{user}`` matches ``shared``, since a user may be called that; it
never matches ``.toolcage``). Mount areas that may overlap are refused, as overlapping host
directories are.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ._principal import Principal, path_segment

PLACEHOLDERS = ("user", "agent")
"""The placeholders a host path may hold, in the order an owner's key lists them."""
DIRECTORY_MODE = 0o700
"""The mode of a directory made for a principal: only its owner may enter it."""

_BRACED = re.compile(r"\{([^{}/]*)\}")
_SEGMENT = re.compile(r"[A-Za-z0-9_%~-]+")
"""What :func:`path_segment` may produce."""
_WALK = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Slot:
    """A component holding a placeholder: ``prefix{name}suffix``."""

    prefix: str
    name: str
    """``user`` or ``agent``."""
    suffix: str

    def fill(self, segments: Mapping[str, str]) -> str:
        """The component for an owner's ``segments`` (placeholder -> path segment)."""
        return f"{self.prefix}{segments[self.name]}{self.suffix}"

    def __str__(self) -> str:
        return f"{self.prefix}{{{self.name}}}{self.suffix}"


Part = str | Slot
"""A component of a template: a literal name or a :class:`Slot`."""


@dataclass(frozen=True, slots=True)
class HostTemplate:
    """A host path, possibly naming the principal (see the module docstring).

    >>> template = HostTemplate.parse("users/{user}/workspace").absolute(Path("/srv"))
    >>> template.path(template.segments(Principal(user_id="ada")))
    PosixPath('/srv/users/ada/workspace')
    """

    fixed: Path
    """The fixed parent: the whole path when no placeholder is in it."""
    below: tuple[Part, ...] = ()
    """The components from the first placeholder on (empty: the same path for everyone)."""

    @classmethod
    def parse(cls, path: Path | str) -> HostTemplate:
        """Split ``path`` at its first placeholder; :class:`ValueError` saying what is wrong."""
        text = str(path)
        parts = text.split("/")
        first = next((i for i, part in enumerate(parts) if "{" in part or "}" in part), None)
        if first is None:
            return cls(Path(text))
        below: list[Part] = []
        for part in parts[first:]:
            below.append(_part(part, text))
        fixed = "/".join(parts[:first]) or "."
        if text.startswith("/") and first == 1:
            fixed = "/"
        return cls(Path(fixed), tuple(below))

    @property
    def per_principal(self) -> bool:
        """Whether the path names the principal (differs between principals)."""
        return bool(self.below)

    @property
    def names(self) -> tuple[str, ...]:
        """The placeholders the path holds, in :data:`PLACEHOLDERS` order."""
        used = {part.name for part in self.below if isinstance(part, Slot)}
        return tuple(name for name in PLACEHOLDERS if name in used)

    @property
    def parts(self) -> tuple[Part, ...]:
        """Every component, the fixed parent's first."""
        return (*self.fixed.parts, *self.below)

    def absolute(self, base_dir: Path) -> HostTemplate:
        """This template with its fixed parent resolved against ``base_dir``."""
        return HostTemplate((base_dir / self.fixed).resolve(), self.below)

    def make_fixed(self) -> None:
        """Make the fixed parent and its parents if missing (an :class:`OSError` if that
        fails): owner-only when it holds principals' directories, else with the default
        mode, as ``create = true`` always made a mount's directory."""
        if self.per_principal:
            self.fixed.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
        else:
            self.fixed.mkdir(parents=True, exist_ok=True)

    def segments(self, principal: Principal) -> dict[str, str]:
        """The path segments of ``principal`` this template needs (placeholder -> segment)."""
        return owner_segments(self.names, (principal.user_id, principal.agent_id))

    def names_below(self, segments: Mapping[str, str]) -> tuple[str, ...]:
        """The components below the fixed parent, filled with ``segments``."""
        return tuple(p if isinstance(p, str) else p.fill(segments) for p in self.below)

    def path(self, segments: Mapping[str, str]) -> Path:
        """The host path for an owner's ``segments``."""
        return self.fixed.joinpath(*self.names_below(segments))

    def __str__(self) -> str:
        if not self.below:
            return str(self.fixed)
        return "/".join((str(self.fixed).rstrip("/"), *map(str, self.below)))


def _part(part: str, text: str) -> Part:
    if part in ("", ".", ".."):
        raise ValueError(
            f"{text!r}: no empty, '.' or '..' component may follow a placeholder "
            "(each user's directory must lie beneath the fixed parent)"
        )
    if "{" not in part and "}" not in part:
        return part
    found = list(_BRACED.finditer(part))
    for match in found:
        if match.group(1) not in PLACEHOLDERS:
            raise ValueError(
                f"{text!r}: {match.group(0)!r} is not a placeholder; use {{user}} or {{agent}}"
            )
    if not found or "{" in _BRACED.sub("", part) or "}" in _BRACED.sub("", part):
        raise ValueError(f"{text!r}: a brace outside {{user}} or {{agent}} in {part!r}")
    if len(found) > 1:
        raise ValueError(
            f"{text!r}: {part!r} holds {len(found)} placeholders; put each in a path "
            "component of its own (as in '{user}/{agent}'), so that no two principals' "
            "names run together"
        )
    match = found[0]
    return Slot(part[: match.start()], match.group(1), part[match.end() :])


def owner_segments(names: Iterable[str], ids: tuple[str, str]) -> dict[str, str]:
    """``names`` mapped to the path segments of the user and agent ``ids``."""
    user_id, agent_id = ids
    return {name: path_segment(user_id if name == "user" else agent_id) for name in names}


def may_overlap(a: HostTemplate, b: HostTemplate) -> bool:
    """Whether some principals' directories of ``a`` and ``b`` (absolute templates) could be
    the same directory or one inside the other."""
    return all(_may_match(x, y) for x, y in zip(a.parts, b.parts, strict=False))


def _may_match(x: Part, y: Part) -> bool:
    if isinstance(x, Slot):
        return _slot_may_match(x, y)
    if isinstance(y, Slot):
        return _slot_may_match(y, x)
    return x == y


def _slot_may_match(slot: Slot, other: Part) -> bool:
    if isinstance(other, str):
        inner = other[len(slot.prefix) : len(other) - len(slot.suffix)]
        return (
            other.startswith(slot.prefix)
            and other.endswith(slot.suffix)
            and len(other) > len(slot.prefix) + len(slot.suffix)
            and _SEGMENT.fullmatch(inner) is not None
        )
    # Two slots: one name can fill both only where their literal ends agree.
    prefixes = slot.prefix.startswith(other.prefix) or other.prefix.startswith(slot.prefix)
    suffixes = slot.suffix.endswith(other.suffix) or other.suffix.endswith(slot.suffix)
    return prefixes and suffixes


def reach(
    template: HostTemplate,
    segments: Mapping[str, str],
    *,
    create: bool,
    passable: bool = False,
    give_to: int | None = None,
) -> Path:
    """The owner's directory of ``template`` (absolute), reached beneath the fixed parent
    one component at a time without following a link, each missing one made when
    ``create`` is set (mode :data:`DIRECTORY_MODE`), and checked to be the very directory
    its path names once it is there. Two callers making the same directory at once both
    succeed.

    ``passable``: the directories above it that this process owns may be passed through by
    any user (``o+x``, never listed), for a bubblewrap started as another uid; ``give_to``:
    the directory itself, while this process owns it, is given to that uid.

    Raises :class:`FileNotFoundError` for a missing component without ``create``, another
    :class:`OSError` for a link or a non-directory on the way (``ELOOP``/``ENOTDIR``) or a
    path that names another directory than the one reached (``ESTALE``).
    """
    names = template.names_below(segments)
    path = template.fixed.joinpath(*names)
    fd = os.open(template.fixed, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in names:
            if passable:
                let_pass(fd)
            try:
                inner = os.open(name, _WALK, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, DIRECTORY_MODE, dir_fd=fd)
                inner = os.open(name, _WALK, dir_fd=fd)
            os.close(fd)
            fd = inner
        made = os.fstat(fd)
        mine = made.st_uid == os.geteuid()
        if give_to is not None and mine and made.st_uid != give_to:
            os.fchown(fd, give_to, give_to)
    finally:
        os.close(fd)
    named = os.stat(path, follow_symlinks=False)
    if (made.st_dev, made.st_ino) != (named.st_dev, named.st_ino):
        raise OSError(errno.ESTALE, f"{path} changed while it was reached", str(path))
    return path


def let_pass(fd: int) -> None:
    """Let any user pass through the directory ``fd`` when this process owns it."""
    info = os.fstat(fd)
    if info.st_uid == os.geteuid() and not info.st_mode & stat.S_IXOTH:
        os.fchmod(fd, stat.S_IMODE(info.st_mode) | stat.S_IXOTH)
