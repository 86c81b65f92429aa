"""The conversation as providers and stores see it: messages, tool calls, reasoning, usage (and its
price), images, and their stored form (docs/format.md)."""

from crab._contracts.images import IMAGE_TYPES, ImagePart, ImageTooLarge, sniff_image
from crab._contracts.messages import (
    AssistantMessage,
    Message,
    StopReason,
    Thinking,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    json_text,
    message_from_dict,
    message_to_dict,
    parse_tool_arguments,
    unique_id,
    usage_from_dict,
    usage_to_dict,
)
from crab._loop.pricing import usage_cost, with_cost

__all__ = [
    "IMAGE_TYPES",
    "AssistantMessage",
    "ImagePart",
    "ImageTooLarge",
    "Message",
    "StopReason",
    "Thinking",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "json_text",
    "message_from_dict",
    "message_to_dict",
    "parse_tool_arguments",
    "sniff_image",
    "unique_id",
    "usage_cost",
    "usage_from_dict",
    "usage_to_dict",
    "with_cost",
]
