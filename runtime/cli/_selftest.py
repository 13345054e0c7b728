"""``toolcage selftest``: run the adversarial corpora against a config, for CI.

    toolcage selftest [--config FILE] [--only paths,races,ssrf,shell,secrets,principals]
                      [--budget SECONDS]
                      [--json] [--junit FILE]

Prints one line per attack class (held, or ESCAPED with the config key responsible), or
with ``--json`` one JSON document; ``--junit FILE`` also writes JUnit XML for a CI's test
report. Progress goes to stderr, on a terminal only. Exit status: 0 when every attack
held, 1 when one escaped, 2 for bad usage or a config that does not load, 3 when a class
could not run: its control call failed (the runtime, not the config, is broken), or the
``--budget`` ran out before it started or while it ran (what it did not try did not hold;
the reason names ``--budget`` and its seconds). A class the config has nothing of (no
shell, no network tool, no secret) is listed as skipped.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from toolcage.policies import ConfigError

from .._errors import UsageError

if TYPE_CHECKING:
    from ..selftest import Report

EXIT_HELD, EXIT_ESCAPED, EXIT_USAGE, EXIT_NOT_RUN = 0, 1, 2, 3


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], *, arguments: bool = True
) -> argparse.ArgumentParser:
    """The ``selftest`` subcommand, with its arguments when ``arguments`` (they name the
    attack classes, which loads the corpora: only when this is the verb parsed)."""
    selftest = commands.add_parser(
        "selftest",
        help="attack this config with the adversarial corpora; exit 0 only if it holds",
    )
    if not arguments:
        return selftest
    from ..selftest import CLASSES  # the corpora: only to parse this verb

    selftest.add_argument("--config", metavar="FILE", help="operator config (TOML)")
    selftest.add_argument(
        "--only", metavar="CLASSES", help=f"comma-separated classes ({','.join(CLASSES)})"
    )
    selftest.add_argument(
        "--budget", metavar="SECONDS", type=float, default=50.0, help="time budget (default 50)"
    )
    selftest.add_argument("--json", action="store_true", help="print the report as JSON")
    selftest.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    return selftest


def run_selftest_command(args: argparse.Namespace) -> int:
    from ..selftest import CLASSES, run_selftest  # the corpora: only for this verb

    only = CLASSES
    if args.only:
        only = tuple(part.strip() for part in args.only.split(",") if part.strip())
        unknown = [c for c in only if c not in CLASSES]
        if unknown or not only:
            print(
                f"error: --only: unknown class {', '.join(unknown) or '(none)'} "
                f"(the classes: {', '.join(CLASSES)})",
                file=sys.stderr,
            )
            return EXIT_USAGE
    if args.budget <= 0:
        print(f"error: --budget must be above 0 (got {args.budget:g})", file=sys.stderr)
        return EXIT_USAGE
    progress = _progress if sys.stderr.isatty() else None
    try:
        report = anyio.run(
            lambda: run_selftest(args.config, only=only, budget=args.budget, progress=progress)
        )
    except (ConfigError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if progress is not None:
        print("\r\033[K", end="", file=sys.stderr)
    print(report.to_json() if args.json else report.text())
    if args.junit:
        _write_atomically(Path(args.junit), report.to_junit())
    return exit_status(report)


def exit_status(report: Report) -> int:
    """An escape outranks a class not run: the config is what CI asks about."""
    if not report.held:
        return EXIT_ESCAPED
    return EXIT_NOT_RUN if report.not_run else EXIT_HELD


def _progress(attack: str) -> None:
    print(f"\r\033[Kselftest: {attack} ...", end="", file=sys.stderr, flush=True)


def _write_atomically(path: Path, text: str) -> None:
    directory = path.resolve().parent
    fd, tmp = tempfile.mkstemp(prefix=".junit-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
