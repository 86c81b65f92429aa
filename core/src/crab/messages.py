"""The conversation as providers and stores see it: messages, tool calls, reasoning, usage (its
price and a run's limits on it), images, their stored form (docs/format.md), and a library run's
history as data (docs/library.md)."""

from crab._assembly.history import HistoryAnchor, HistoryItem, messages_from_json, messages_to_json
from crab._assembly.limits import UsageLimitExceeded, UsageLimits
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
)
from crab._values.message_json import (
    message_from_dict,
    message_to_dict,
    parse_tool_arguments,
    unique_id,
    usage_from_dict,
    usage_to_dict,
)
from crab._values.pricing import usage_cost, with_cost
from crab._values.utf8 import json_text

__all__ = [
    "IMAGE_TYPES",
    "AssistantMessage",
    "HistoryAnchor",
    "HistoryItem",
    "ImagePart",
    "ImageTooLarge",
    "Message",
    "StopReason",
    "Thinking",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UsageLimitExceeded",
    "UsageLimits",
    "UserMessage",
    "json_text",
    "message_from_dict",
    "message_to_dict",
    "messages_from_json",
    "messages_to_json",
    "parse_tool_arguments",
    "sniff_image",
    "unique_id",
    "usage_cost",
    "usage_from_dict",
    "usage_to_dict",
    "with_cost",
]
