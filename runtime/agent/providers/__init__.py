"""Provider adapters: one wire format each, behind :class:`ProviderAdapter`."""

from toolcage.policies._public import publish

from .anthropic import AnthropicAdapter
from .base import (
    AssistantMessage,
    Message,
    ModelRequest,
    ModelResponse,
    ProviderAdapter,
    StreamDecoder,
    ToolOutcome,
    ToolResultsMessage,
    Usage,
    UserMessage,
)
from .gemini import GeminiAdapter, gemini_schema
from .openai_chat import OpenAIChatAdapter
from .openai_responses import OpenAIResponsesAdapter

__all__ = [
    "AnthropicAdapter",
    "AssistantMessage",
    "GeminiAdapter",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "OpenAIChatAdapter",
    "OpenAIResponsesAdapter",
    "ProviderAdapter",
    "StreamDecoder",
    "ToolOutcome",
    "ToolResultsMessage",
    "Usage",
    "UserMessage",
    "gemini_schema",
]

# The public home of these names is the facade ``toolcage.runtime.providers``. They are named
# so here, where they are first imported (the loop imports ``.base`` without the facade), so
# that reprs say the same whichever module a process happens to import first.
publish({**globals(), "__name__": "toolcage.runtime.providers"}, __all__, within=__name__)
del publish
