"""The agent loop over a runtime.

:func:`~._loop.run_turn` runs a model's turn (:mod:`._round` runs one round of its calls),
talking to the model through :mod:`._model_client` in one of the wire formats of
:mod:`.providers` (streamed: :mod:`._sse` and :mod:`._accumulator`), and records the
conversation (:mod:`._conversation`). :mod:`._delegate` is ``delegate_to_agent`` and
:mod:`._scheduled_turns` runs scheduled goals as turns.

Imports the core (the runtime through :class:`~toolcage.runtime.abc.ToolHost`, never
``Runtime``) and host_bindings; nothing of cli/, mcp/ or observe/. It imports nothing
eagerly: a host that only runs tools never loads the loop.
"""
