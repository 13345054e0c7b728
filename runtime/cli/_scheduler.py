"""``toolcage scheduler``: the scheduler service as a long-running command.

    toolcage scheduler [--config FILE] --provider NAME --base-url URL --model NAME

Fires the due schedules of the ``[state]`` store's file as agent turns on the named model
(API key from ``$TOOLCAGE_MODEL_API_KEY``), under the ``[scheduler]`` budgets, each as the
principal that created it (see :mod:`..agent._scheduled_turns`), with the ``[scheduler]`` lease,
poll interval and concurrency. Each firing and each run's end is logged to stderr;
notifications are the :class:`~.._channel.JsonLinesChannel`'s lines on stdout. SIGTERM or
SIGINT stops it cleanly: runs in flight are cancelled and recorded failed, and it exits 0.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from pathlib import Path

import anyio
from toolcage.host_bindings._scheduler import Scheduler, SchedulerSettings
from toolcage.host_bindings._scheduler._sqlite import EmbeddedScheduleStore
from toolcage.host_bindings._store import StoreError
from toolcage.policies import ConfigError, ToolcageConfig, load_config

from .._channel import JsonLinesChannel
from .._errors import UsageError
from .._runtime import Runtime
from ..agent._model_client import HttpModelClient
from ..agent._scheduled_turns import ScheduledTurns

API_KEY_ENV = "TOOLCAGE_MODEL_API_KEY"
EXIT_OK, EXIT_USAGE = 0, 2
logger = logging.getLogger("toolcage.scheduler")


def run_scheduler(args: argparse.Namespace) -> int:
    """Run the service until a signal; the exit status."""
    missing = [flag for flag in ("provider", "base_url", "model") if not getattr(args, flag)]
    api_key = os.environ.get(API_KEY_ENV, "")
    if missing or not api_key:
        needs = [f"--{flag.replace('_', '-')}" for flag in missing]
        needs += [] if api_key else [f"${API_KEY_ENV}"]
        print(f"error: the scheduler needs {', '.join(needs)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    path = config.state.embedded_path(config.base_dir)
    if path is None:
        print("error: schedules are kept only in an embedded [state] store", file=sys.stderr)
        return EXIT_USAGE
    try:
        return anyio.run(_serve, args, config, api_key, path)
    except (UsageError, StoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE


async def _serve(args: argparse.Namespace, config: ToolcageConfig, api_key: str, path: Path) -> int:
    client = HttpModelClient.for_provider(
        args.provider, base_url=args.base_url, api_key=api_key, model=args.model
    )
    channel = JsonLinesChannel()
    runtime = Runtime.from_config(config, channel=channel, models={"default": client})
    url = config.state.store_url(config.base_dir)
    with EmbeddedScheduleStore(path, url=url) as store:
        scheduler = Scheduler(
            store,
            ScheduledTurns(runtime, client),
            channel=channel,
            settings=SchedulerSettings.from_config(config.scheduler),
        )
        async with runtime, anyio.create_task_group() as group:
            group.start_soon(_stop_on_signal, group.cancel_scope)
            logger.info(
                "scheduler %s started on %s",
                scheduler.owner,
                url,
                extra={"event": "scheduler.started", "owner": scheduler.owner, "store": url},
            )
            await scheduler.run()
    return EXIT_OK


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for received in signals:
            name = signal.Signals(received).name
            logger.info(
                "received %s; stopping", name, extra={"event": "scheduler.stopping", "signal": name}
            )
            scope.cancel()
            return
