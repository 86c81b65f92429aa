"""The chat-completions stream parser: a pure state machine from SSE events to crab stream events.

No IO. Text and thinking deltas come out as they arrive; tool calls and the final message only
from ``finish()``, after the stream has ended with ``[DONE]``, so a cut-off stream never yields a
tool call. Usage rides on the final message unpriced: the loop prices it and reports it once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from crab import ProviderError
from crab.events import MessageEnd, StreamEvent, TextDelta, ThinkingDelta, ToolCallEvent
from crab.messages import AssistantMessage, StopReason, Thinking, ToolCall, Usage
from crab_provider_kit import ServerSentEvent, parse_tool_arguments, unique_id

from crab_provider_openai.errors import classify_error, details_from_object
from crab_provider_openai.thinktags import ThinkTagSplitter

DONE = "[DONE]"

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "end",
    "end_turn": "end",
    "content_filter": "end",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


@dataclass
class _ToolSlot:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def add(self, function: Mapping[str, Any]) -> None:
        """Take a ``function`` delta: the first name seen (some servers repeat it), then the argument text."""
        name = function.get("name")
        if name and not self.name:
            self.name = name
        arguments = function.get("arguments")
        if arguments:
            self.arguments.append(arguments if isinstance(arguments, str) else json.dumps(arguments))


def parse_usage(data: Mapping[str, Any]) -> Usage:
    """OpenAI-style usage. ``prompt_tokens`` includes cached tokens; crab counts them apart.

    Cache writes are reported only by gateways fronting Claude: OpenRouter as
    ``prompt_tokens_details.cache_write_tokens``, LiteLLM as ``cache_creation_input_tokens``;
    they are part of ``prompt_tokens`` too."""
    prompt = int(data.get("prompt_tokens") or 0)
    details = data.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or data.get("prompt_cache_hit_tokens") or 0)
    written = int(details.get("cache_write_tokens") or data.get("cache_creation_input_tokens") or 0)
    completion_details = data.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=max(0, prompt - cached - written),
        output_tokens=int(data.get("completion_tokens") or 0),
        cache_read_tokens=cached,
        cache_write_tokens=written,
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
    )


class ChatStreamParser:
    """Feed it the SSE events of one chat-completions stream; call ``finish()`` once ``done``.

    Handles: tool-call deltas keyed by ``index`` (no index continues the last call; ids sent
    once or in every chunk; an index reused with a new id starts a new call), the legacy
    ``function_call`` delta (used only when the stream sends no ``tool_calls``: llama.cpp's
    Python server sends both, with the same call in each), ``reasoning_content``/``reasoning``
    and ``<think>`` tags as thinking, usage from the final chunk, and ``error`` objects sent
    inside the stream. Every call it returns has an id of its own.
    """

    end_marker = DONE

    def __init__(
        self,
        model: str,
        provider: str = "openai",
        key_env: str = "OPENAI_API_KEY",
        think_tags: bool = True,
        key_table: str = "",
    ) -> None:
        self.model = model
        self.provider = provider
        self.key_env = key_env
        self.key_table = key_table
        self.done = False
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._slots: list[_ToolSlot] = []
        self._legacy: _ToolSlot | None = None
        self._by_index: dict[int, int] = {}
        self._last: int | None = None
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._response_id = ""
        self._think = ThinkTagSplitter() if think_tags else None

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        """Events made visible by one SSE event. Raises ``ProviderError`` for a server error."""
        data = event.data
        if data == DONE:
            self.done = True
            return []
        try:
            chunk = json.loads(data)
        except ValueError:
            raise ProviderError(f"{self.provider}: the server sent a stream chunk that is not JSON", "stream") from None
        if not isinstance(chunk, dict):
            raise ProviderError(f"{self.provider}: the server sent a stream chunk that is not an object", "stream")
        return self.feed_chunk(chunk)

    def feed_chunk(self, chunk: Mapping[str, Any]) -> list[StreamEvent]:
        """Events made visible by one ``chat.completion.chunk`` object."""
        if chunk.get("error"):
            message, code = details_from_object(chunk)
            raise classify_error(
                None,
                message,
                code,
                provider=self.provider,
                model=self.model,
                key_env=self.key_env,
                key_table=self.key_table,
            )
        if not self._response_id:
            self._response_id = str(chunk.get("id") or "")
        usage = chunk.get("usage")
        if usage:
            self._usage = parse_usage(usage)
        choices = chunk.get("choices")
        if not choices:
            return []
        events: list[StreamEvent] = []
        for choice in choices:
            # crab never asks for n > 1; a server that sends other choices anyway is ignored.
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if delta:
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                if reasoning and isinstance(reasoning, str):
                    self._thinking.append(reasoning)
                    events.append(ThinkingDelta(reasoning))
                content = delta.get("content")
                if content:
                    if self._think is None or self._think.passthrough:
                        self._text.append(content)
                        events.append(TextDelta(content))
                    else:
                        self._split(self._think.feed(content), events)
                tool_calls = delta.get("tool_calls")
                if tool_calls:
                    for call in tool_calls:
                        self._tool_delta(call)
                function_call = delta.get("function_call")
                if function_call and not tool_calls and isinstance(function_call, Mapping):
                    self._legacy_delta(function_call)
            reason = choice.get("finish_reason")
            if reason:
                self._finish_reason = reason
        return events

    def _split(self, pieces: list[tuple[bool, str]], events: list[StreamEvent]) -> None:
        for thinking, text in pieces:
            if thinking:
                self._thinking.append(text)
                events.append(ThinkingDelta(text))
            else:
                self._text.append(text)
                events.append(TextDelta(text))

    def _tool_delta(self, call: Mapping[str, Any]) -> None:
        index = call.get("index")
        call_id = call.get("id") or ""
        if isinstance(index, int):
            position = self._by_index.get(index)
            if position is not None and call_id and self._slots[position].id not in ("", call_id):
                position = None  # the server reused an index for a new call
            if position is None:
                position = self._new_slot()
                self._by_index[index] = position
        else:
            position = self._last
            if position is None or (call_id and self._slots[position].id not in ("", call_id)):
                position = self._new_slot()
        self._last = position
        slot = self._slots[position]
        if call_id and not slot.id:
            slot.id = call_id
        slot.add(call.get("function") or {})

    def _legacy_delta(self, function: Mapping[str, Any]) -> None:
        # Kept apart from the indexed calls: a stream that sends ``tool_calls`` anywhere has
        # said everything there, and the legacy field beside it repeats the same call.
        self._legacy = self._legacy or _ToolSlot()
        self._legacy.add(function)

    def _new_slot(self) -> int:
        self._slots.append(_ToolSlot())
        return len(self._slots) - 1

    def tool_calls(self) -> tuple[ToolCall, ...]:
        slots = self._slots or ([self._legacy] if self._legacy is not None else [])
        calls: list[ToolCall] = []
        taken: set[str] = set()
        for position, slot in enumerate(slots):
            raw = "".join(slot.arguments)
            arguments, problem = parse_tool_arguments(raw)
            call_id = unique_id(slot.id or f"call_{self._response_id or 'local'}_{position}", taken)
            calls.append(
                ToolCall(
                    id=call_id,
                    name=slot.name,
                    arguments=arguments,
                    raw_arguments=raw if problem else None,
                    parse_error=problem,
                )
            )
        return tuple(calls)

    def finish(self) -> list[StreamEvent]:
        """The closing events of a complete stream: tool calls, then ``MessageEnd`` (with usage)."""
        events: list[StreamEvent] = []
        if self._think is not None:
            self._split(self._think.flush(), events)
        calls = self.tool_calls()
        stop = _STOP_REASONS.get(self._finish_reason or "", "end")
        if calls and stop == "end":
            # Some servers say "stop" even when the reply is a tool call.
            stop = "tool_use"
        events.extend(ToolCallEvent(call) for call in calls)
        thinking = "".join(self._thinking)
        message = AssistantMessage(
            content="".join(self._text),
            tool_calls=calls,
            thinking=(Thinking(thinking),) if thinking else (),
            stop_reason=stop,
            usage=self._usage,
            model=self.model,
            provider=self.provider,
        )
        events.append(MessageEnd(message))
        return events
