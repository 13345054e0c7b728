"""Capabilities the host lends to WASI guests (ABI in :mod:`._abi` and :mod:`._fs`), and who
gets which."""

from toolcage.policies._public import publish

from ._abi import ABI_VERSION, AbiError, module_name
from ._base import CallResources, CallState, HostBinding, Landing, current_call
from ._channel import Channel, ChannelMessage, MessageKind
from ._clock import ClockBinding, host_timezone
from ._fs import FsBinding
from ._grants import HostBindings, UnknownCapability, for_worker
from ._http import HttpBinding
from ._http_client import EgressClient
from ._http_response import HttpFailure, HttpResponse
from ._media import MediaBinding, media_message, text_messages
from ._notes import MemoryBinding
from ._progress import LogBinding, ProgressBinding
from ._rate_limits import ByteMeter, RateLimited, RateLimiter
from ._scheduler import (
    ManualClock,
    Schedule,
    Scheduler,
    SchedulerSettings,
    ScheduleStore,
    TurnOutcome,
    TurnRequest,
    TurnRunner,
    open_schedule_store,
)
from ._schedules import SchedulerBinding
from ._scratchpad import ScratchpadBinding
from ._search import SearchBinding
from ._state import StateServices
from ._store import StoreError
from ._vault import VaultBinding

__all__ = [
    "ABI_VERSION",
    "AbiError",
    "ByteMeter",
    "CallResources",
    "CallState",
    "Channel",
    "ChannelMessage",
    "ClockBinding",
    "EgressClient",
    "FsBinding",
    "HostBinding",
    "HostBindings",
    "HttpBinding",
    "HttpFailure",
    "HttpResponse",
    "Landing",
    "LogBinding",
    "ManualClock",
    "MediaBinding",
    "MemoryBinding",
    "MessageKind",
    "ProgressBinding",
    "RateLimited",
    "RateLimiter",
    "Schedule",
    "ScheduleStore",
    "Scheduler",
    "SchedulerBinding",
    "SchedulerSettings",
    "ScratchpadBinding",
    "SearchBinding",
    "StateServices",
    "StoreError",
    "TurnOutcome",
    "TurnRequest",
    "TurnRunner",
    "UnknownCapability",
    "VaultBinding",
    "current_call",
    "for_worker",
    "host_timezone",
    "media_message",
    "module_name",
    "open_schedule_store",
    "text_messages",
]

publish(globals(), __all__)
del publish
