"""Every seam of toolcage, in one place: the Protocols to implement to plug in.

=====================  ===============================================================
:class:`Tool`          anything that can be called as a tool (``schema``, ``execute``,
                       ``timeout``, ``safety_tier``); :class:`DeclaresNeeds` adds what it
                       needs from the host, for listings
:class:`SecurityCheck` a check every call passes before it runs (paths, shell, egress)
:class:`HasPathArguments` a tool whose arguments name guest paths, for the path check
:class:`ApprovalPolicy` who says yes to a privileged call
:class:`ModelClient`   a model behind :func:`~toolcage.runtime.run_turn`
:class:`ProviderAdapter`, :class:`StreamDecoder`
                       one provider's wire format, whole and streamed
:class:`HostBinding`   a capability linked into a WASI guest (``http``, ``clock``, ...)
:class:`Channel`       where messages to the user go: scheduled runs' notifications, media
                       (:class:`~toolcage.runtime._channel.JsonLinesChannel` prints them)
:class:`ToolHost`      a runtime as the agent loop, delegation, scheduled turns and the
                       MCP server use it (:class:`~toolcage.runtime.Runtime` is one)
:class:`TurnRunner`    what runs a scheduled goal for the scheduler: a
                       :class:`~toolcage.runtime.TurnRequest` in, a
                       :class:`~toolcage.runtime.TurnOutcome` out
                       (:class:`~toolcage.runtime.ScheduledTurns` runs it as an agent turn)
=====================  ===============================================================

Each is a :class:`typing.Protocol`: implement the methods, no base class to inherit.
"""

from toolcage.host_bindings import Channel, HostBinding, TurnRunner
from toolcage.policies._public import publish

from ._approval import ApprovalPolicy
from ._host import ToolHost
from ._path_check import HasPathArguments
from ._security import SecurityCheck
from ._tool import DeclaresNeeds, Tool
from .agent._model_client import ModelClient
from .agent.providers.base import ProviderAdapter, StreamDecoder

__all__ = [
    "ApprovalPolicy",
    "Channel",
    "DeclaresNeeds",
    "HasPathArguments",
    "HostBinding",
    "ModelClient",
    "ProviderAdapter",
    "SecurityCheck",
    "StreamDecoder",
    "Tool",
    "ToolHost",
    "TurnRunner",
]

publish(globals(), __all__, within="toolcage.runtime")
del publish
