"""The operator's rate limits, counted in the state store.

A :class:`RateLimiter` holds the ``[rate_limits]`` of a runtime and the counters they
keep in the state store (``[state] url``, opened on the first limited call, even when the
state tools are disabled). The pipeline asks :meth:`RateLimiter.admit` before a call runs;
the ``http`` and ``search`` bindings count response bytes through a :class:`ByteMeter`.

Bytes are counted in leases: a meter takes a share of the window's quota before it needs
it (64 KiB, then as much again as the response has already used), spends it as chunks
arrive, takes more when it runs out, and gives back what is left at the end. So a large
response costs a few writes to the store, not one per chunk, and while a lease is out the
other requests see that much less of the quota.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolcage.policies import Principal, RateRule, StateConfig
from toolcage.policies._rate_limits import RateLimits, rules_for

from ._backends._urls import make_room
from ._store import StoreError, StoreUnavailable, open_store
from ._store._counters import (
    RETURN_BYTES,
    RETURN_CALL,
    TAKE_BYTES,
    TAKE_CALL,
    Counters,
    Statement,
    Take,
)
from ._store._open import auth_token
from ._store._protocol import StateStore

FIRST_LEASE = 64 * 1024
"""Bytes a meter takes before the first chunk arrives."""


class RateLimited(Exception):
    """A limit is spent: ``message`` says which and when to retry; ``details`` carries
    ``retry_after`` (seconds), ``limit`` and the limit's settings."""

    def __init__(self, message: str, details: dict[str, Any]) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class RateLimiter:
    """The configured limits and their counters.

    >>> limiter = RateLimiter(config.rate_limits, config.state, config.base_dir)  # doctest: +SKIP
    >>> limiter.admit(limiter.assign("http_request", "side_effecting", ("http",)), "ada", "default")
    >>> limiter.close()
    """

    def __init__(
        self,
        limits: RateLimits,
        state: StateConfig,
        base_dir: Path,
        *,
        on_open: Callable[[], None] = lambda: None,
    ) -> None:
        self.limits = limits
        self.clock: Callable[[], float] = time.time
        """Seconds of wall-clock time (every process of a host agrees on it); tests
        replace it to move time."""
        self.url = state.store_url(base_dir)
        self._state = state
        self._base_dir = base_dir
        self._on_open = on_open
        self._rules: dict[str, tuple[RateRule, ...]] = {}
        self._lock = threading.Lock()
        self._store: StateStore | None = None
        self._counters: Counters | None = None
        self._closed = False

    # -- which limits apply --------------------------------------------------------------

    def assign(self, name: str, tier: str, needs: Sequence[str]) -> tuple[RateRule, ...]:
        """The limits of the tool ``name`` (of ``tier``, needing ``needs``), kept for it."""
        rules = self._rules.get(name)
        if rules is None:
            rules = self._rules[name] = rules_for(self.limits, name, tier, tuple(needs))
        return rules

    def rules(self, name: str) -> tuple[RateRule, ...] | None:
        """The limits assigned to ``name``; ``None`` before :meth:`assign`."""
        return self._rules.get(name)

    # -- counters ------------------------------------------------------------------------

    @property
    def counters(self) -> Counters:
        """The store's counters, opened on first use; :class:`StoreError` naming the URL."""
        counters = self._counters
        if counters is not None:
            return counters
        with self._lock:
            if self._closed:
                raise StoreUnavailable(self.url, "the runtime is closed")
            if self._counters is None:
                token = auth_token(self._state, self.url)
                path = self._state.embedded_path(self._base_dir)
                if path is not None:
                    make_room(path, self.url)
                store = open_store(self.url, base_dir=self._base_dir, auth_token=token)
                found: Counters | None = getattr(store, "counters", None)
                if found is None:
                    store.close()
                    raise StoreUnavailable(self.url, "this store keeps no counters")
                self._store, self._counters = store, found
                self._on_open()
            return self._counters

    @property
    def opened(self) -> bool:
        """Whether the counters are open (a call then never waits to open them)."""
        return self._counters is not None

    def close(self) -> None:
        """Close the store (idempotent)."""
        with self._lock:
            self._closed = True
            store, self._store, self._counters = self._store, None, None
        if store is not None:
            store.close()

    # -- calls ---------------------------------------------------------------------------

    def admit(self, rules: Sequence[RateRule], principal: Principal, *, wait: bool = True) -> None:
        """Spend a call of every limit in ``rules`` that counts calls, and check that no
        byte quota among them is spent; :class:`RateLimited` (having spent nothing) when
        one is. ``wait=False``: :class:`~._store._counters.WouldWait` instead of waiting
        for the store."""
        now = self.clock()
        statements: list[Statement] = []
        for rule in rules:
            config = rule.config
            if config.calls is not None:
                key = rule.key("calls", principal)
                refill = config.refill_per_second
                statements.append((TAKE_CALL, (key, refill, config.bucket_size, now)))
            if rule.metered:
                key = rule.key("bytes", principal)
                statements.append((TAKE_BYTES, (key, config.bytes, config.window, 0, now)))
        if not statements:
            return
        applied = self.counters.apply(statements, wait=wait, keep=_all_granted(rules))
        refusals: list[tuple[float, RateRule, str]] = []
        spent: list[Statement] = []
        found = iter(applied.takes)
        for rule in rules:
            config = rule.config
            if config.calls is not None:
                take = _taken(next(found))
                if take.granted >= 1:
                    key = rule.key("calls", principal)
                    spent.append((RETURN_CALL, (key, config.bucket_size)))
                else:
                    wait_for = (1 - take.level) / rule.config.refill_per_second
                    refusals.append((wait_for, rule, "calls"))
            if rule.metered:
                take = _taken(next(found))
                if config.bytes is not None and take.level >= config.bytes:
                    refusals.append((take.stamp + config.window - now, rule, "bytes"))
        if not refusals:
            return
        if spent and applied.committed:  # a store that cannot roll back gives them back
            self.counters.apply(spent)
        wait_for, rule, kind = max(refusals, key=lambda refusal: refusal[0])
        raise _refusal(rule, kind, wait_for, principal)

    # -- bytes ---------------------------------------------------------------------------

    def meter(self, tool: str, principal: Principal) -> ByteMeter | None:
        """A meter for one request of ``tool`` by ``principal``, or ``None`` when no byte
        quota applies."""
        rules = [rule for rule in self._rules.get(tool, ()) if rule.metered]
        return ByteMeter(self, rules, principal) if rules else None


class ByteMeter:
    """Counts one request's response bytes against byte quotas (see the module docstring)."""

    def __init__(
        self, limiter: RateLimiter, rules: Sequence[RateRule], principal: Principal
    ) -> None:
        self._limiter = limiter
        self._rules = rules
        self._principal = principal
        self._held = [0.0] * len(rules)
        self._windows = [0.0] * len(rules)
        self.counted = 0
        """Bytes counted so far."""

    def start(self) -> None:
        """Take the first lease; :class:`RateLimited` when a quota is already spent."""
        self._take(FIRST_LEASE, starting=True)

    def count(self, size: int) -> None:
        """Spend ``size`` bytes that arrived; :class:`RateLimited` when a quota cannot
        cover them (the response is then to be cut)."""
        self.counted += size
        short = [i for i, held in enumerate(self._held) if held < size]
        for i in range(len(self._held)):
            self._held[i] -= size
        if short:
            self._take(max(FIRST_LEASE, self.counted), starting=False, only=short)

    def close(self) -> None:
        """Give back what the leases hold and nobody used."""
        statements: list[Statement] = []
        for i, rule in enumerate(self._rules):
            if self._held[i] > 0:
                key = rule.key("bytes", self._principal)
                statements.append((RETURN_BYTES, (key, self._windows[i], self._held[i])))
            self._held[i] = 0
        if statements:  # on failure the unused lease stays spent until its window ends
            with contextlib.suppress(StoreError):
                self._limiter.counters.apply(statements)

    def _take(self, amount: int, *, starting: bool, only: Sequence[int] | None = None) -> None:
        indexes = range(len(self._rules)) if only is None else only
        now = self._limiter.clock()
        statements: list[Statement] = []
        for i in indexes:
            rule = self._rules[i]
            config = rule.config
            key = rule.key("bytes", self._principal)
            need = amount if starting else max(amount, -self._held[i])
            statements.append((TAKE_BYTES, (key, config.bytes, config.window, need, now)))
        takes = self._limiter.counters.apply(statements).takes
        refused: tuple[float, RateRule] | None = None
        for i, found in zip(indexes, takes, strict=True):
            take = _taken(found)
            self._held[i] += take.granted
            self._windows[i] = take.stamp
            config = self._rules[i].config
            spent = take.granted == 0 if starting else self._held[i] < 0
            if spent and config.bytes is not None:
                self._held[i] = max(0.0, self._held[i])
                wait_for = take.stamp + config.window - now
                if refused is None or wait_for > refused[0]:
                    refused = (wait_for, self._rules[i])
        if refused is not None:
            wait_for, rule = refused
            refusal = _refusal(rule, "bytes", wait_for, self._principal)
            if not starting:
                refusal.message = (
                    f"the response was cut after {self.counted:,} bytes: {refusal.message}"
                )
                refusal.args = (refusal.message,)
            raise refusal


def _taken(take: Take | None) -> Take:
    if take is None:
        raise StoreError("a rate-limit counter returned no row")
    return take


def _all_granted(rules: Sequence[RateRule]) -> Callable[[Sequence[Take | None]], bool]:
    """Whether every call limit in ``rules`` granted its call and no quota is spent."""

    def keep(takes: Sequence[Take | None]) -> bool:
        found = iter(takes)
        for rule in rules:
            if rule.config.calls is not None and _taken(next(found)).granted < 1:
                return False
            if rule.metered and _taken(next(found)).level >= (rule.config.bytes or 0):
                return False
        return True

    return keep


def _refusal(rule: RateRule, kind: str, wait_for: float, principal: Principal) -> RateLimited:
    config = rule.config
    retry_after = max(0.1, math.ceil(wait_for * 10 - 1e-6) / 10)
    whose = rule.whose(principal)
    window = f"{config.window:g} s"
    if kind == "calls":
        what = f"{config.calls} calls per {window}"
        if config.burst is not None:
            what += f", at most {config.burst} at once"
        message = f"rate limit {rule.name!r} exceeded for {whose} ({what})"
    else:
        message = (
            f"byte quota {rule.name!r} spent for {whose} ({config.bytes:,} response bytes"
            f" per {window})"
        )
    details: dict[str, Any] = {
        "retry_after": retry_after,
        "limit": rule.name,
        "kind": kind,
        "window": config.window,
        "per": list(config.per),
    }
    if kind == "calls":
        details["calls"] = config.calls
        details["burst"] = config.bucket_size
    else:
        details["bytes"] = config.bytes
    return RateLimited(f"{message}; retry after {retry_after:g} s", details)
