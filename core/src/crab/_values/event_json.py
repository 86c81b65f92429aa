"""The versioned JSON object of an event (``event_to_dict``: ``{"v": 1, "type": ..., <fields>}``)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from crab._contracts.events import Event, FileDiff, PlanItem
from crab._contracts.messages import FORMAT_VERSION, AssistantMessage, ToolCall, Usage
from crab._values.message_json import message_to_dict, tool_call_to_dict, usage_to_dict


def _json_value(value: Any) -> Any:
    if isinstance(value, Usage):
        return usage_to_dict(value)
    if isinstance(value, ToolCall):
        return tool_call_to_dict(value)
    if isinstance(value, AssistantMessage):
        return message_to_dict(value)
    if isinstance(value, tuple):
        return [_json_value(item) for item in value]
    if isinstance(value, Event):
        nested = event_to_dict(value)
        nested.pop("v", None)
        return nested
    if isinstance(value, FileDiff | PlanItem):
        return {f.name: getattr(value, f.name) for f in fields(value) if getattr(value, f.name) is not None}
    return value


def event_to_dict(event: Event) -> dict[str, Any]:
    """The versioned JSON object for one event: ``{"v": 1, "type": ..., <fields>}``."""
    data: dict[str, Any] = {"v": FORMAT_VERSION, "type": event.type}
    for f in fields(event):
        value = getattr(event, f.name)
        if value is None or (value == () and f.name == "diffs"):
            continue
        data[f.name] = _json_value(value)
    return data
