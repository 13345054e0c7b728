"""Provider adapters: one wire format each, behind :class:`ProviderAdapter`.

The public names of :mod:`toolcage.runtime.agent.providers`, where the adapters live beside
the agent loop that uses them.
"""

from .agent.providers import (
    AnthropicAdapter,
    AssistantMessage,
    GeminiAdapter,
    Message,
    ModelRequest,
    ModelResponse,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    ProviderAdapter,
    StreamDecoder,
    ToolOutcome,
    ToolResultsMessage,
    Usage,
    UserMessage,
    gemini_schema,
)

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
