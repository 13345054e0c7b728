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

publish(globals(), __all__)
del publish
