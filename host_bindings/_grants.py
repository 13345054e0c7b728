"""Which bindings a tool's guest gets linked with.

A tool declares the capabilities it needs (``needs`` in its declaration); by default it is
granted exactly those, and the operator can take any away with ``[egress.grants]``. The
runner defines only the granted bindings in the tool's linker, so a guest importing
anything else fails at instantiation -- there is no call-time check to get wrong.

A ``worker`` session's guests get fewer: only :data:`WORKER_CAPABILITIES` of what their tool
was granted, and ``http`` and ``memory`` in their read-only forms (:func:`for_worker`). A
worker researches -- it reads files, searches the user's notes, searches and fetches the
web -- but no guest in a worker can send on a channel, write a note, a scratchpad or a
schedule, or send the network anything but a ``GET``/``HEAD`` without a body, whatever its
declared tier.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import cast

import wasmtime
from toolcage.policies import EgressPolicy, SecretPolicy, ToolcageConfig

from ._base import HostBinding
from ._clock import ClockBinding
from ._fs import FsBinding, RawDefiner, define_with_caller
from ._http import HttpBinding
from ._media import MediaBinding
from ._notes import MemoryBinding
from ._progress import LogBinding, ProgressBinding
from ._rate_limits import RateLimiter
from ._relay import Relayable, RelayBinding
from ._schedules import BookOpener, SchedulerBinding
from ._scratchpad import ScratchpadBinding
from ._search import SearchBinding
from ._state import StateServices
from ._vault import VaultBinding

WORKER_CAPABILITIES = frozenset({"fs", "clock", "progress", "log", "search", "http", "memory"})
"""What a worker session's guests may be linked with: reading granted mounts (which a worker
gets read-only), the clock, progress and logging, web search, and ``http`` and ``memory``
in their read-only forms (:meth:`HttpBinding.reading`: ``GET``/``HEAD`` without a body;
:meth:`MemoryBinding.searching`: ``search`` alone). Everything else (``channel``,
``scratchpad``, ``vault``, ``scheduler``) is withheld."""


def for_worker(bindings: Iterable[HostBinding]) -> tuple[HostBinding, ...]:
    """The part of ``bindings`` a worker session's guest is linked with."""
    return tuple(_read_only(b) for b in bindings if b.name in WORKER_CAPABILITIES)


def _read_only(binding: HostBinding) -> HostBinding:
    if isinstance(binding, RelayBinding):  # the relay of the read-only form, or of nothing
        return RelayBinding(cast(Relayable, _read_only(binding.inner)), binding.call)
    if isinstance(binding, HttpBinding):
        return binding.reading()
    if isinstance(binding, MemoryBinding):
        return binding.searching()
    return binding


class UnknownCapability(ValueError):
    """A tool declares a capability no binding provides."""


class HostBindings:
    """The host's bindings, and the grant policy that hands them out.

    >>> bindings = HostBindings.from_config(config)
    >>> for binding in bindings.granted("web_fetch", ["http", "progress"]):
    ...     binding.define(linker)
    """

    def __init__(self, bindings: Iterable[HostBinding], policy: EgressPolicy) -> None:
        self._by_name: Mapping[str, HostBinding] = {b.name: b for b in bindings}
        self._policy = policy

    @classmethod
    def from_config(
        cls,
        config: ToolcageConfig,
        *,
        define_raw: RawDefiner = define_with_caller,
        state: StateServices | None = None,
        schedules: BookOpener | None = None,
        rate_limits: RateLimiter | None = None,
        secrets: SecretPolicy | None = None,
    ) -> HostBindings:
        """The standard bindings under ``config``; ``define_raw`` defines the ``fs`` imports
        (see :class:`FsBinding`). With ``state`` (the runtime's one store), the ``memory``,
        ``scratchpad`` and ``vault`` bindings share it; with ``schedules`` (the runtime's
        schedule book), so does the ``scheduler`` binding; with ``rate_limits``, ``http``
        and ``search`` count response bytes against its byte quotas. ``http`` sends the
        ``secrets`` (loaded from ``config`` when not given)."""
        policy = EgressPolicy(config.egress)
        if secrets is None:
            secrets = SecretPolicy.load(config.secrets, config.base_dir)
        standard: list[HostBinding] = [
            HttpBinding.from_policy(policy, secrets, rate_limits),
            SearchBinding.from_policy(policy, rate_limits),
            ClockBinding(),
            FsBinding(define_raw),
            ProgressBinding(),
            LogBinding(),
            MediaBinding(config.channel.max_media_bytes, config.channel.max_message_chars),
        ]
        if state is not None:
            standard += [MemoryBinding(state), ScratchpadBinding(state), VaultBinding(state)]
        if schedules is not None:
            standard.append(SchedulerBinding(schedules))
        return cls(standard, policy)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._by_name)

    def granted(self, tool: str, needs: Iterable[str]) -> list[HostBinding]:
        """The bindings ``tool`` gets, in name order; unknown capabilities are an error."""
        needs = tuple(needs)
        unknown = sorted(set(needs) - set(self._by_name))
        if unknown:
            raise UnknownCapability(
                f"tool {tool!r} needs {', '.join(unknown)}; "
                f"the host provides {', '.join(sorted(self._by_name))}"
            )
        chosen = self._policy.granted_bindings(tool, needs)
        return [self._by_name[name] for name in sorted(chosen)]

    def define_granted(self, linker: wasmtime.Linker, tool: str, needs: Iterable[str]) -> None:
        """Define exactly the granted bindings of ``tool`` in ``linker``."""
        for binding in self.granted(tool, needs):
            binding.define(linker)
