"""The shell daemon: a separate process that runs shell commands under an OS sandbox.

The runtime talks to it through :class:`SidecarClient`, which has a
:class:`SidecarLauncher` start the daemon on demand and restart it after a crash; the
daemon itself is ``python -m toolcage.sidecar`` (``toolcage sidecar``). Only the wire
protocol (:mod:`._protocol`) and the policies are shared between the two processes;
:func:`prepare_workspace` is what a root runtime does to the workspace before either runs.
"""

from ._client import SidecarClient, SidecarClosed, SidecarError, SidecarLost
from ._grant import prepare_workspace
from ._launcher import SidecarLauncher, SidecarUnavailable, default_runtime_dir
from ._protocol import MAX_FRAME_BYTES, POLICY_REFUSED, PROTOCOL, VERSION, ProtocolError

__all__ = [
    "MAX_FRAME_BYTES",
    "POLICY_REFUSED",
    "PROTOCOL",
    "VERSION",
    "ProtocolError",
    "SidecarClient",
    "SidecarClosed",
    "SidecarError",
    "SidecarLauncher",
    "SidecarLost",
    "SidecarUnavailable",
    "default_runtime_dir",
    "prepare_workspace",
]
