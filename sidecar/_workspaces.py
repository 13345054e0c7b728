"""Which workspace a command works in: the one of the runtime, or its principal's own.

With ``[shell] workspace = "workspace"`` every command binds the same directory, as it
always did. A workspace that names the principal (``users/{user}/workspace``; see
:mod:`toolcage.policies._host_template`) is one directory per *owner* -- the user, or the
user and agent, its placeholders name -- and the sidecar decides which, by itself:

- a request names the principal it is for by its raw ``user`` and ``agent`` ids, which are
  checked like a :class:`~toolcage.policies.Principal`'s and become path components only
  here, through :func:`~toolcage.policies.path_segment`: a client names an id, never a
  directory, and every id has a directory of its own beneath the fixed parent;
- before each command the directory is reached from a descriptor of the fixed parent one
  component at a time, never following a link, made (mode ``0700``) when missing, and
  checked to be what its path names (:func:`~toolcage.policies._host_template.reach`);
  bubblewrap then binds that path. No tool reaches the directories on it (the runtime
  refuses a workspace naming the principal that could hold or lie inside a mount), so
  nothing a model drives can swap one in between;
- a root sidecar, whose bubblewrap runs as ``shell.sandbox_uid``, gives each workspace it
  makes to that uid and lets it pass through the directories above (``o+x`` on those the
  sidecar owns: it may enter them, never list them).

Sessions and background jobs are kept per owner and session name
(:class:`~._service.ShellService`), so a request for one owner never reaches another
owner's working directory, variables or job output, whatever session name it gives.

The sidecar trusts the peer that passed its uid check -- the runtime that started it, or
any process of the same user -- to say which principal a request is for: that peer may
act for any user. What no request can do is combine one owner's workspace with another's
session, or reach a directory beside or above the fixed parent.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from toolcage.policies._host_template import HostTemplate, let_pass, owner_segments, reach
from toolcage.policies._principal import check_id

Owner = tuple[str, ...]
"""The path segments that pick an owner's workspace; empty for the one shared workspace."""
SCRATCH: Owner = ("~scratch",)
"""The owner of :meth:`Workspaces.scratch` (no id's segment starts with ``~``)."""


class Workspaces:
    """The owners' workspaces of a ``[shell] workspace`` (see the module docstring).

    ``template`` ``None`` (or one naming no principal): one workspace shared by all, which
    the sandbox binds itself; :meth:`path` then names none.
    """

    def __init__(
        self, template: HostTemplate | None = None, *, owner_uid: int | None = None
    ) -> None:
        self.template = template if template is not None and template.per_principal else None
        self.owner_uid = owner_uid
        """The uid commands run as when it is not the sidecar's (a root sidecar's
        ``sandbox_uid``): a workspace made is given to it."""
        self._scratch: Path | None = None

    def owner(self, user: object, agent: object) -> Owner:
        """The owner a request for ``user`` and ``agent`` (raw ids) works as; ``()`` for the
        shared workspace. :class:`ValueError` when an id the workspace needs is missing or
        is no id."""
        if self.template is None:
            return ()
        names = self.template.names
        for name, value in (("user", user), ("agent", agent)):
            if name not in names:
                continue
            if value is None:
                raise ValueError(
                    f"this sidecar keeps a workspace per {' and '.join(names)} "
                    f"({self.template}); the request must name its {name!r}"
                )
            check_id(name, value)
        segments = owner_segments(names, (str(user), str(agent)))
        return tuple(segments[name] for name in names)

    def path(self, owner: Owner) -> Path | None:
        """``owner``'s workspace, made on first use and checked (see the module docstring);
        ``None`` for the shared workspace. :class:`OSError` when it cannot be reached."""
        if self.template is None:
            return None
        if owner == SCRATCH and self._scratch is not None:
            return self._scratch
        names = self.template.names
        if len(owner) != len(names) or owner == SCRATCH:
            raise ValueError(f"{owner!r} is no owner of {self.template}")
        segments = dict(zip(names, owner, strict=True))
        passable = self.owner_uid is not None
        return reach(
            self.template, segments, create=True, passable=passable, give_to=self.owner_uid
        )

    def let_pass(self) -> None:
        """Let :attr:`owner_uid` pass through the fixed parent, when the sidecar owns it."""
        if self.template is None or self.owner_uid is None:
            return
        fd = os.open(self.template.fixed, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            let_pass(fd)
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def scratch(self) -> Iterator[Owner]:
        """An owner whose workspace is a new empty directory, removed afterwards: where the
        startup probe runs when there is no shared workspace to run it in."""
        if self.template is None:
            yield ()
            return
        directory = Path(tempfile.mkdtemp(prefix="toolcage-probe-"))
        try:
            if self.owner_uid is not None:
                os.chown(directory, self.owner_uid, self.owner_uid)
            self._scratch = directory
            yield SCRATCH
        finally:
            self._scratch = None
            shutil.rmtree(directory, ignore_errors=True)
