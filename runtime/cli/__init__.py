"""The ``toolcage`` command: one module per verb, and the demo.

:mod:`._main` parses the command line and dispatches; ``check`` is :mod:`._check`,
``new-tool`` :mod:`._new_tool`, ``scheduler`` :mod:`._scheduler` (its arguments apart, in
:mod:`._scheduler_args`, so that parsing does not load the scheduler), ``mcp`` :mod:`._mcp`,
``audit`` :mod:`._audit`, ``selftest`` :mod:`._selftest`, and ``call --jsonl`` reads and
writes :mod:`._jsonl`.
:mod:`.demo` is ``make demo``.

The top layer: it may import anything of the runtime, and nothing imports it (``make lint``
checks this, ``[tool.importlinter]``).
"""

from ._main import main

__all__ = ["main"]
