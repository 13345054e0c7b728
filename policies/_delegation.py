"""The ``[delegation]`` section: budgets of the turns ``delegate_to_agent`` runs.

::

    [delegation]
    max_depth = 1      # levels of delegation below a turn (1: delegates cannot delegate)
    max_turns = 8      # model calls per delegated turn
    max_cost = 0.20    # spend per delegated turn, at the [loop] prices; unset: no limit

The agents themselves are ``[agents.NAME]`` sections (their tools, model, system prompt).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DelegationConfig(BaseModel):
    """The ``[delegation]`` section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_depth: int = Field(1, ge=1, le=8)
    """How many levels of delegation a turn may start below itself."""
    max_turns: int = Field(8, gt=0)
    """Model calls a delegated turn may make."""
    max_cost: float | None = Field(None, gt=0)
    """Spend per delegated turn, at the ``[loop]`` prices; unset: no limit."""
