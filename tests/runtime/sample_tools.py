"""Host tools the runtime tests call."""

from __future__ import annotations

import enum
from typing import Literal

import pydantic
from toolcage.runtime import SafetyTier, ToolExecutionContext, tool


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(pydantic.BaseModel):
    x: int
    y: int = 0


@tool(safety_tier=SafetyTier.READ_ONLY)
async def echo(text: str) -> str:
    """Return the text unchanged.

    Args:
        text: What to return.
    """
    return text


@tool(safety_tier=SafetyTier.READ_ONLY)
def describe(
    count: int,
    ratio: float,
    flag: bool,
    tags: list[str],
    extra: dict[str, int],
    colour: Colour,
    mode: Literal["fast", "slow"] = "fast",
    note: str | None = None,
    point: Point | None = None,
    ctx: ToolExecutionContext | None = None,
) -> dict[str, object]:
    """Describe every kind of parameter.

    Args:
        count: How many.
        ratio: A fraction.
        flag: Yes or no.
        tags: Labels, possibly
            spanning two lines.
        extra: Named numbers.
        colour: A colour.
        mode: How.
        note: Optional note.
        point: Nested model.
    """
    return {
        "count": count,
        "colour": colour.value,
        "mode": mode,
        "point": point.model_dump() if point else None,
        "tags": tags,
    }
