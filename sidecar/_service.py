"""Shell sessions and background jobs: the daemon's state, independent of the wire.

A :class:`ShellSession` is a working directory inside the workspace and a set of exported
variables. Each command starts from them in namespaces of its own -- forked by the
session's sandbox (:mod:`._sessions`), or in a bubblewrap of its own -- and, when it ends
normally, the final directory and exports it reported become the session's -- a ``cd``
out of the workspace or an assignment to a protected name is not carried over.
Concurrent commands of one session each start from the state before them; the last one
to finish sets the next state.

Sessions are kept by owner and name: the owner (:mod:`._workspaces`) is nobody when the
workspace is shared, else the user (or user and agent) whose workspace it is. A command
binds its session's owner's workspace, and a job answers only its own session and owner,
so two owners never share a session, a job's output or a file.

The service runs what it is given: the shell policy is the server's to apply
(:mod:`._server` checks every command a peer sends before it reaches
:meth:`ShellService.exec` or :meth:`ShellService.start_job`).

A background job is a command without a timeout of its own (``background_seconds``
bounds it) whose output is kept in rings and read by polls; it belongs to its session,
and closing the session kills it.
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import anyio
from anyio.abc import TaskGroup
from toolcage.policies import ShellLimits, protected_env_reason
from toolcage.policies.shell._env import SANDBOX_HOME

from ._output import HeadTail, Ring
from ._process import Running, finish, kill_group, start, supervise, watch
from ._sandbox import PATH, BubblewrapSandbox, Sandbox
from ._sessions import SessionSandboxes
from ._workspaces import Owner, Workspaces

logger = logging.getLogger("toolcage.sidecar")

WORKSPACE_ROOT = PurePosixPath(".")
_VOLATILE = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})
BASE_ENV = {
    "PATH": PATH,
    "HOME": SANDBOX_HOME,  # fixed: the policy knows what $HOME and ~ stand for
    "TMPDIR": "/tmp",  # noqa: S108
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "USER": "sandbox",
    "LOGNAME": "sandbox",
    "SHELL": "/bin/bash",
}


class ServiceError(Exception):
    """A request the service refuses; ``code`` goes on the wire."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class ShellSession:
    """A session's state between commands."""

    name: str
    owner: Owner = ()
    """Whose workspace its commands work in (see :mod:`._workspaces`)."""
    cwd: PurePosixPath = WORKSPACE_ROOT
    """Relative to the workspace root."""
    env: dict[str, str] = field(default_factory=dict)
    jobs: set[str] = field(default_factory=set)


@dataclass
class Job:
    """A background command."""

    id: str
    session: str
    owner: Owner
    running: Running
    stdout: Ring
    stderr: Ring
    exit_code: int | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    changed: anyio.Event = field(default_factory=anyio.Event)

    def touch(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()


class _Notify:
    """Feeds a ring and wakes pollers."""

    def __init__(self, ring: Ring, job: Job | None = None) -> None:
        self.ring = ring
        self.job = job

    def feed(self, data: bytes) -> None:
        self.ring.feed(data)
        if self.job is not None:
            self.job.touch()


class ShellService:
    """Sessions, commands and jobs over one sandbox (see the module docstring)."""

    def __init__(
        self,
        sandbox: Sandbox,
        limits: ShellLimits,
        *,
        extra_env: Mapping[str, str] | None = None,
        kill_leftovers: bool = False,
        workspaces: Workspaces | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.workspaces = Workspaces() if workspaces is None else workspaces
        """Which workspace each owner's commands bind (the sandbox's own, by default)."""
        self.limits = limits
        self.base_env = {**BASE_ENV, **(extra_env or {})}
        self.kill_leftovers = kill_leftovers
        self.sessions: dict[tuple[Owner, str], ShellSession] = {}
        """In order of last use (the first is the least recently used)."""
        self.jobs: dict[str, Job] = {}
        self.boxes = (
            SessionSandboxes(sandbox)
            if isinstance(sandbox, BubblewrapSandbox) and sandbox.runner is not None
            else None
        )
        """The sandbox of each session, when its commands run in one (:mod:`._sessions`)."""
        self._slots = anyio.CapacityLimiter(limits.concurrent_commands)
        self.jobs_group: TaskGroup | None = None
        """Where background jobs run (set by the server)."""

    # -- sessions ---------------------------------------------------------------------------

    def open(self, name: str, owner: Owner = ()) -> tuple[ShellSession, bool]:
        key = (owner, name)
        session = self.sessions.pop(key, None)
        if session is not None:
            self.sessions[key] = session  # now the most recently used
            return session, False
        if len(self.sessions) >= self.limits.sessions:
            idle = next((s for s in self.sessions.values() if not s.jobs), None)
            if idle is None:
                raise ServiceError("busy", f"{len(self.sessions)} sessions have running jobs")
            self._drop((idle.owner, idle.name))
        session = self.sessions[key] = ShellSession(name, owner)
        return session, True

    async def close(self, name: str, owner: Owner = ()) -> None:
        session = self.sessions.get((owner, name))
        if session is None:
            raise ServiceError("no_session", f"no session {name!r}")
        self._drop((owner, name))
        for job_id in list(session.jobs):
            await self.kill(job_id, name, owner)

    def _drop(self, key: tuple[Owner, str]) -> None:
        """Forget a session, and end its sandbox."""
        del self.sessions[key]
        if self.boxes is not None:
            self.boxes.close(key)

    def guest_cwd(self, session: ShellSession) -> str:
        return str(self.sandbox.root / session.cwd)

    # -- commands ---------------------------------------------------------------------------

    async def exec(
        self, name: str, command: str, seconds: float, output_bytes: int, owner: Owner = ()
    ) -> dict[str, Any]:
        session, created = self.open(name, owner)
        stdout, stderr = HeadTail(output_bytes), HeadTail(output_bytes)
        started = time.monotonic()
        try:
            self._slots.acquire_nowait()  # a free slot is taken without a trip through the loop
        except anyio.WouldBlock:
            await self._slots.acquire()
        try:
            running = self._start(session, command, in_session=self.boxes is not None)
            exit_code, timed_out, report = await supervise(running, stdout, stderr, seconds)
        finally:
            self._slots.release()
        if report is not None and (owner, name) in self.sessions:
            self._carry(session, report.cwd, report.env)
        return {
            "exit_code": exit_code,
            "timed_out": timed_out,
            "stdout": stdout.text(),
            "stderr": stderr.text(),
            "stdout_bytes": stdout.total,
            "stderr_bytes": stderr.total,
            "duration": round(time.monotonic() - started, 6),
            "cwd": self.guest_cwd(session),
            "created": created,
        }

    def _start(self, session: ShellSession, command: str, *, in_session: bool = False) -> Running:
        env = {**session.env, **self.base_env}
        try:
            workspace = self.workspaces.path(session.owner)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise ServiceError("workspace", f"the workspace cannot be reached: {reason}") from None
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        if in_session and self.boxes is not None and isinstance(self.sandbox, BubblewrapSandbox):
            try:
                argv = self.sandbox.session_argv(command, session.cwd)
                key = (session.owner, session.name)
                process = self.boxes.start(key, workspace, argv, env, write_fd)
            except OSError as exc:
                os.close(read_fd)
                raise ServiceError("sandbox", f"the session's sandbox failed: {exc}") from None
            except BaseException:
                os.close(read_fd)
                raise
            return Running(process, read_fd, time.monotonic(), self.kill_leftovers)
        try:
            spawn = self.sandbox.spawn(command, session.cwd, env, write_fd, workspace)
        except BaseException:
            os.close(read_fd)
            os.close(write_fd)
            raise
        try:
            return start(spawn, read_fd, kill_leftovers=self.kill_leftovers)
        except BaseException:
            os.close(read_fd)
            raise

    def _carry(self, session: ShellSession, cwd: str | None, env: Mapping[str, str]) -> None:
        if cwd is not None:
            root = self.sandbox.root
            path = PurePosixPath(os.path.normpath(cwd))
            if path == root or root in path.parents:
                session.cwd = path.relative_to(root)
        session.env = {
            key: value
            for key, value in env.items()
            if key not in _VOLATILE
            and key not in self.base_env
            and protected_env_reason(key) is None
        }

    # -- background jobs --------------------------------------------------------------------

    async def start_job(
        self, name: str, command: str, output_bytes: int, owner: Owner = ()
    ) -> dict[str, Any]:
        if self.jobs_group is None:
            raise ServiceError("unavailable", "background jobs are not available")
        if sum(job.exit_code is None for job in self.jobs.values()) >= self.limits.background_jobs:
            raise ServiceError("busy", f"{self.limits.background_jobs} background jobs already run")
        session, created = self.open(name, owner)
        running = self._start(session, command)
        job = Job(
            "job-" + secrets.token_hex(6),
            name,
            owner,
            running,
            Ring(output_bytes),
            Ring(output_bytes),
        )
        self.jobs[job.id] = job
        session.jobs.add(job.id)
        self.jobs_group.start_soon(self._run_job, job)
        return {"job": job.id, "cwd": self.guest_cwd(session), "created": created}

    async def _run_job(self, job: Job) -> None:
        process = job.running.process
        try:
            await watch(
                job.running,
                _Notify(job.stdout, job),
                _Notify(job.stderr, job),
                self.limits.background_seconds,
            )
        finally:
            with anyio.CancelScope(shield=True):
                await finish(job.running)
                code = process.returncode
                job.exit_code = (128 - code if code < 0 else code) if code is not None else -1
                job.done.set()
                job.touch()

    def _job(self, job_id: str, session: str, owner: Owner) -> Job:
        job = self.jobs.get(job_id)
        if job is None or job.session != session or job.owner != owner:
            raise ServiceError("no_job", f"no background job {job_id!r} in this session")
        return job

    async def poll(
        self, job_id: str, session: str, wait: float, owner: Owner = ()
    ) -> dict[str, Any]:
        job = self._job(job_id, session, owner)
        if wait > 0 and not job.done.is_set() and not (job.stdout.pending or job.stderr.pending):
            with anyio.move_on_after(wait):
                await job.changed.wait()
        stdout, out_dropped = job.stdout.take()
        stderr, err_dropped = job.stderr.take()
        finished = job.done.is_set()
        if finished and not (job.stdout.pending or job.stderr.pending):
            self._forget(job)
        return {
            "running": not finished,
            "exit_code": job.exit_code,
            "stdout": stdout,
            "stderr": stderr,
            "dropped": out_dropped + err_dropped,
        }

    async def kill(self, job_id: str, session: str, owner: Owner = ()) -> dict[str, Any]:
        job = self._job(job_id, session, owner)
        if not job.done.is_set():
            kill_group(job.running.process)
            with anyio.move_on_after(10):
                await job.done.wait()
        self._forget(job)
        return {"exit_code": job.exit_code}

    def _forget(self, job: Job) -> None:
        self.jobs.pop(job.id, None)
        session = self.sessions.get((job.owner, job.session))
        if session is not None:
            session.jobs.discard(job.id)

    async def shutdown(self) -> None:
        """Kill every background job, and end every session's sandbox."""
        for job in list(self.jobs.values()):
            if not job.done.is_set():
                kill_group(job.running.process)
        if self.boxes is not None:
            self.boxes.close_all()
