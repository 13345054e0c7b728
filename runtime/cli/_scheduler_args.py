"""The ``toolcage scheduler`` subcommand's arguments (the command is :mod:`._scheduler`)."""

from __future__ import annotations

import argparse


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], *, arguments: bool = True
) -> argparse.ArgumentParser:
    """The ``scheduler`` subcommand, with its arguments when ``arguments`` (they name the
    provider adapters, which loads the model client: only when this is the verb parsed)."""
    parser = commands.add_parser(
        "scheduler", help="run the scheduler service until SIGTERM (fires due schedules)"
    )
    if not arguments:
        return parser
    from ..agent._model_client import ADAPTERS  # the model client: only to parse this verb

    parser.add_argument("--config", metavar="FILE", help="operator config (TOML)")
    parser.add_argument("--provider", choices=sorted(ADAPTERS), help="the model's wire format")
    parser.add_argument("--base-url", metavar="URL", help="the provider's endpoint")
    parser.add_argument("--model", metavar="NAME", help="the model to run scheduled turns on")
    return parser
