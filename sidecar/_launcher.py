"""Starting the daemon on demand, and again after it died.

The launcher runs ``python -m toolcage.sidecar`` with the ``[shell]`` section on its stdin
and keeps that pipe open as a lifeline: when the runtime's process ends, however it ends,
the daemon sees end of file and stops. Each start gets a new private directory
(``mkdtemp``: mode 0700) for the socket and the daemon's log, and waits for its ``ready``
line; a daemon that cannot start (no bubblewrap, say) exits with its reason in the log,
which becomes the error.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import anyio
from toolcage.policies import ShellConfig

STARTUP_SECONDS = 30.0


class SidecarUnavailable(Exception):
    """The daemon cannot be started (the message carries its own reason)."""


class SidecarLauncher:
    """Owns the daemon process: start, liveness, restart, stop."""

    def __init__(
        self,
        config: ShellConfig,
        *,
        runtime_dir: Path | None = None,
        python: str = sys.executable,
    ) -> None:
        self.config = config
        """The ``[shell]`` section, with an absolute workspace."""
        self.runtime_dir = runtime_dir
        self.python = python
        self.generation = 0
        """Bumped at every start; connections to an older daemon are stale."""
        self.socket_path: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._directory: Path | None = None
        self._lock = anyio.Lock()
        self._closed = False

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    async def ensure(self) -> tuple[Path, int]:
        """The socket of a running daemon (started if need be) and its generation."""
        if self.socket_path is not None and not self._closed and self.alive():
            return self.socket_path, self.generation  # nothing to start: no lock to take
        async with self._lock:
            if self._closed:
                raise SidecarUnavailable("the shell sidecar has been closed")
            if self.socket_path is None or not self.alive():
                self.socket_path = await self._start()
            return self.socket_path, self.generation

    async def restart(self, generation: int, *, kill: bool = False) -> None:
        """Restart the daemon if ``generation`` is still the current one.

        ``kill``: the daemon is wedged, so SIGKILL it rather than let it stop by itself.
        """
        async with self._lock:
            if generation == self.generation and not self._closed:
                if kill and self._process is not None:
                    self._process.kill()
                self.socket_path = await self._start()

    async def _start(self) -> Path:
        process, directory = await anyio.to_thread.run_sync(self._spawn)
        socket_path = directory / "sidecar.sock"
        stdout = process.stdout
        if stdout is None:  # pragma: no cover - Popen was asked for a pipe
            raise SidecarUnavailable("no pipe to the shell sidecar")
        try:
            with anyio.fail_after(STARTUP_SECONDS):
                line = await anyio.to_thread.run_sync(stdout.readline, abandon_on_cancel=True)
        except TimeoutError:
            await anyio.to_thread.run_sync(self._stop)
            raise SidecarUnavailable(
                f"the shell sidecar did not start within {STARTUP_SECONDS:g} s"
            ) from None
        if line.strip() != b"ready":
            await anyio.to_thread.run_sync(process.wait)
            reason = _reason((directory / "sidecar.log").read_text("utf-8", "replace"))
            await anyio.to_thread.run_sync(self._stop)
            raise SidecarUnavailable(f"the shell sidecar could not start: {reason}")
        stdout.close()
        self.generation += 1
        return socket_path

    def _spawn(self) -> tuple[subprocess.Popen[bytes], Path]:
        """Stop any old daemon, then start one in a fresh private directory (blocking);
        :class:`SidecarUnavailable` naming the cause when the process cannot be made."""
        self._stop()
        try:
            directory = Path(tempfile.mkdtemp(prefix="toolcage-shell-", dir=self.runtime_dir))
        except OSError as exc:
            raise SidecarUnavailable(
                f"the shell sidecar could not start: no private directory in"
                f" {self.runtime_dir or tempfile.gettempdir()} ({exc.strerror})"
            ) from None
        argv = [self.python, "-m", "toolcage.sidecar", "--socket", str(directory / "sidecar.sock")]
        argv += ["--config-stdin", "--exit-with-stdin"]
        try:
            with open(directory / "sidecar.log", "wb") as log:
                process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    start_new_session=True,
                )
        except OSError as exc:
            shutil.rmtree(directory, ignore_errors=True)
            raise SidecarUnavailable(
                f"the shell sidecar could not start: {self.python} cannot be run as uid"
                f" {os.geteuid()} ({exc.strerror})"
            ) from None
        self._process, self._directory = process, directory
        if process.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                process.stdin.write(self.config.model_dump_json().encode() + b"\n")
                process.stdin.flush()
        return process, directory

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            if process.stdin is not None:
                with contextlib.suppress(BrokenPipeError):
                    process.stdin.close()  # the lifeline: the daemon stops on its own
            try:
                process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
        directory, self._directory = self._directory, None
        self.socket_path = None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)

    async def aclose(self) -> None:
        async with self._lock:
            self._closed = True
            await anyio.to_thread.run_sync(self._stop)

    def __del__(self) -> None:
        if getattr(self, "_process", None) is not None:
            warnings.warn(
                "SidecarLauncher was not closed; the shell sidecar ends with this process",
                ResourceWarning,
                stacklevel=1,
            )


def _reason(log: str) -> str:
    lines = [line for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    chosen = errors[-1] if errors else (lines[-1] if lines else "it exited without a message")
    return chosen.removeprefix("toolcage sidecar: error: ")


def default_runtime_dir() -> Path | None:
    """``$XDG_RUNTIME_DIR`` when it is set and private, else the system temporary dir."""
    candidate = os.environ.get("XDG_RUNTIME_DIR")
    if candidate and Path(candidate).is_dir() and os.stat(candidate).st_uid == os.getuid():
        return Path(candidate)
    return None
