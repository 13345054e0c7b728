"""The ``toolcage`` command: one module per verb, and the demo.

:mod:`._main` parses the command line and dispatches; ``check`` is :mod:`._check`,
``new-tool`` :mod:`._new_tool`, ``scheduler`` :mod:`._scheduler` (its arguments apart, in
:mod:`._scheduler_args`, so that parsing does not load the scheduler), ``mcp`` :mod:`._mcp`,
``audit`` :mod:`._audit`, ``selftest`` :mod:`._selftest`, ``serve`` :mod:`._serve`, and
``call --jsonl`` reads and writes :mod:`._jsonl`. A ``call`` for a server (``--server PATH``
or ``$TOOLCAGE_SERVER``) is :mod:`._client`, taken before the rest of the command is loaded:
it needs the standard library only.
:mod:`.demo` is ``make demo``.

The top layer: it may import anything of the runtime, and nothing imports it (``make lint``
checks this, ``[tool.importlinter]``).
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (``None``: this process's own, which then ends); see
    :func:`._main.main`."""
    import sys

    from ._client import run_client, server_path

    if server_path(sys.argv[1:] if argv is None else argv) is not None:
        return run_client(sys.argv[1:] if argv is None else argv)
    from ._main import main as in_process

    return in_process(argv)


__all__ = ["main"]
