"""The conventions' opt-in content attributes (``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.system_instructions``, ``gen_ai.tool.call.arguments``/``result``) as JSON strings in the
conventions' message schema, masked by crab's redaction and held to a length."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crab.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from crab.secrets import Redactor

FINISH_REASONS = {
    "end": "stop",
    "tool_use": "tool_call",
    "max_tokens": "length",
    "error": "error",
    "aborted": "aborted",
}
"""crab's stop reasons in the conventions' finish-reason words (``stop``, ``length``, ``tool_call``)."""


class ContentRecorder:
    """Turns crab's messages into the attributes' JSON, every string masked by ``redactor``."""

    def __init__(self, redactor: Redactor, max_chars: int) -> None:
        self.redactor = redactor
        self.max_chars = max_chars

    def _text(self, text: str) -> str:
        return self.redactor.text(text)

    def _json(self, value: Any) -> str:
        """``value`` as JSON, masked; cut at ``max_chars`` with a marker (a cut value is no longer JSON,
        and says so)."""
        return self._cut(self.redactor.text(json.dumps(value, ensure_ascii=False, default=str)))

    def _cut(self, text: str) -> str:
        if len(text) <= self.max_chars:
            return text
        return text[: self.max_chars] + f"…[cut by crab-otel: {len(text) - self.max_chars} more characters]"

    def _parts(self, message: Message) -> tuple[str, list[dict[str, Any]]]:
        if isinstance(message, UserMessage):
            parts: list[dict[str, Any]] = [{"type": "text", "content": message.content}]
            parts += [{"type": "blob", "modality": "image", "mime_type": i.media_type} for i in message.images]
            return "user", parts
        if isinstance(message, ToolResultMessage):
            return "tool", [{"type": "tool_call_response", "id": message.call_id, "result": message.content}]
        assert isinstance(message, AssistantMessage)
        parts = [{"type": "reasoning", "content": t.text} for t in message.thinking]
        if message.content:
            parts.append({"type": "text", "content": message.content})
        parts += [tool_call_part(call) for call in message.tool_calls]
        return "assistant", parts

    def input_messages(self, messages: Sequence[Message]) -> str:
        """The request's messages in order; over ``max_chars`` the oldest are left out first (the
        newest say most about this call), and a single message still too long is cut."""
        kept: list[str] = []
        size = 2
        for message in reversed(messages):
            role, parts = self._parts(message)
            text = json.dumps({"role": role, "parts": parts}, ensure_ascii=False, default=str)
            if kept and size + len(text) + 2 > self.max_chars:
                break
            kept.append(text)
            size += len(text) + 2
        return self._cut(self.redactor.text("[" + ", ".join(reversed(kept)) + "]"))

    def output_messages(self, text: str, calls: Iterable[ToolCall], stop_reason: str | None) -> str:
        parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
        parts += [tool_call_part(call) for call in calls]
        reason = FINISH_REASONS.get(stop_reason or "end", stop_reason or "stop")
        return self._json([{"role": "assistant", "parts": parts, "finish_reason": reason}])

    def system_instructions(self, system: str) -> str:
        return self._json([{"type": "text", "content": system}])

    def value(self, value: Mapping[str, Any] | str) -> str:
        """A tool's arguments (an object) or result (its text) as the attribute's JSON."""
        return self._json(value)


def tool_call_part(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_call", "id": call.id, "name": call.name, "arguments": dict(call.arguments)}
