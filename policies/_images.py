"""The ``[images]`` section: how large an image from a tool may be when it reaches a model.

::

    [images]
    max_width = 8000          # pixels
    max_height = 8000
    max_bytes = 5242880       # of the image as a model receives it (base64)

The defaults are the strictest provider's: Anthropic's Messages API refuses an image over
8,000 pixels on a side or over 5 MB of base64; OpenAI and Gemini accept more.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ImagesConfig(BaseModel):
    """The ``[images]`` section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_width: int = Field(8000, gt=0)
    """Widest image sent, in pixels."""
    max_height: int = Field(8000, gt=0)
    """Tallest image sent, in pixels."""
    max_bytes: int = Field(5 * 1024 * 1024, gt=0)
    """Largest image sent, in bytes of its base64 encoding (what a provider counts)."""
