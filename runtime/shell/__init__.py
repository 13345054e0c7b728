"""``shell_exec`` and ``shell_job``: the shell, as tools, routed to the sidecar daemon.

``shell_exec`` is ``privileged``: it passes the approval gate like any privileged tool, then
the shell policy (a :class:`ShellPolicyCheck` among the runtime's security checks, and
again in the tool itself, so a tool used outside the pipeline is no weaker), and only then
reaches the sidecar -- which the client starts on first use and restarts after a crash.
The runtime's checks answer early; the sidecar checks every command again against the
same ``[shell]`` config, and its refusal (error code ``policy``) is a ``permission_denied``
too.
Each conversation (``ctx.session_id``) has its own shell sessions; ``session_id`` names
one of them, so a model can keep a build directory and a server directory apart. Every
request names the call's user and agent, so that a workspace naming the principal
(``[shell] workspace = "users/{user}/workspace"``) is the caller's own: the sidecar picks
and makes that directory itself (:mod:`toolcage.sidecar._workspaces`).

With ``[shell] mode = "disabled"``, ``shell_exec`` is still listed and answers every call
with ``permission_denied``, so a model learns the shell is off instead of that it is
missing.

A command's result carries ``details`` -- ``exit_code``, ``timed_out``, ``duration``,
``cwd``, ``stdout_bytes``, ``stderr_bytes``, and ``signal`` when the exit code says a signal
ended it (the shell's 128 + N) -- and a display line: ``Ran `make test` (exit 0, 1.20 s)``.
A background command's details are ``{job_id, background, cwd}``; ``shell_job``'s are
``{job_id, running, exit_code}``.

The parts: :mod:`._exec` (``shell_exec``, its policy check, :func:`shell_builtins`),
:mod:`._job` (``shell_job``), :mod:`._sidecar` (reaching the sidecar) and :mod:`._render`
(a command's result). A tool kind: imports the core, policies and the sidecar's client.
"""

from ._exec import DISABLED_MESSAGE, ShellExecTool, ShellPolicyCheck, shell_builtins
from ._job import ShellJobTool
from ._render import render, shown_command
from ._sidecar import ANSWER_GRACE, SidecarHandle, call_sidecar, session_key

__all__ = [
    "ANSWER_GRACE",
    "DISABLED_MESSAGE",
    "ShellExecTool",
    "ShellJobTool",
    "ShellPolicyCheck",
    "SidecarHandle",
    "call_sidecar",
    "render",
    "session_key",
    "shell_builtins",
    "shown_command",
]
