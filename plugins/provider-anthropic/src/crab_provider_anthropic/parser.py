"""The Messages API stream parser: a pure state machine from SSE events to crab stream events.

No IO. Text and thinking deltas come out as they arrive; thinking blocks keep their signature
(and redacted blocks their data) so they can be replayed. Tool calls and the final message come
only from ``finish()``, after ``message_stop``, so a cut-off stream yields none. Usage rides on
the final message unpriced: the loop prices it and reports it once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from crab import ProviderError
from crab.events import MessageEnd, StreamEvent, TextDelta, ThinkingDelta, ToolCallEvent
from crab.messages import AssistantMessage, StopReason, Thinking, ToolCall, Usage
from crab_provider_kit import ServerSentEvent, parse_tool_arguments, unique_id

from crab_provider_anthropic.errors import classify_error, details_from_object

STOP_EVENT = "message_stop"

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end",
    "stop_sequence": "end",
    "refusal": "end",
    "pause_turn": "end",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
}


@dataclass
class _Block:
    kind: str
    parts: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)
    id: str = ""
    name: str = ""
    initial_input: Any = None


def parse_arguments(raw: str, initial: Any) -> tuple[dict[str, Any], str | None]:
    """``(input, parse_error)`` for a tool_use block: streamed JSON, else the block's initial input."""
    if not raw.strip():
        return (dict(initial) if isinstance(initial, Mapping) else {}), None
    return parse_tool_arguments(raw)


def parse_usage(data: Mapping[str, Any], previous: Usage | None = None) -> Usage:
    """Anthropic usage; later events carry cumulative counts, so present fields replace old ones."""
    base = previous or Usage()
    changes: dict[str, int] = {}
    for wire, ours in (
        ("input_tokens", "input_tokens"),
        ("output_tokens", "output_tokens"),
        ("cache_read_input_tokens", "cache_read_tokens"),
        ("cache_creation_input_tokens", "cache_write_tokens"),
    ):
        value = data.get(wire)
        if isinstance(value, int):
            changes[ours] = value
    return replace(base, **changes)


class MessagesStreamParser:
    """Feed it the SSE events of one Messages stream; call ``finish()`` once ``done``.

    A ``tool_use`` block that repeats the id (and name) of the tool_use block just before it
    continues that call: Anthropic-compatible proxies in front of OpenAI-style servers (LiteLLM's
    ``/v1/messages``) open a new block, with the same id, for every argument fragment. Every
    call it returns has an id of its own.
    """

    end_marker = STOP_EVENT

    def __init__(
        self,
        model: str,
        provider: str = "anthropic",
        key_env: str = "ANTHROPIC_API_KEY",
    ) -> None:
        self.model = model
        self.provider = provider
        self.key_env = key_env
        self.done = False
        self._blocks: list[_Block] = []
        self._open: dict[int, _Block] = {}
        self._usage: Usage | None = None
        self._stop: str | None = None

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        """Events made visible by one SSE event. Raises ``ProviderError`` for an error event."""
        if event.event == "ping":
            return []
        try:
            data = json.loads(event.data)
        except ValueError:
            raise ProviderError(f"{self.provider}: the server sent a stream event that is not JSON", "stream") from None
        if not isinstance(data, dict):
            raise ProviderError(f"{self.provider}: the server sent a stream event that is not an object", "stream")
        kind = data.get("type") or event.event
        if kind == "content_block_delta":
            return self._delta(data)
        if kind == "content_block_start":
            return self._start(data)
        if kind == "message_start":
            message = data.get("message") or {}
            usage = message.get("usage")
            if isinstance(usage, Mapping):
                self._usage = parse_usage(usage, self._usage)
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            if delta.get("stop_reason"):
                self._stop = str(delta["stop_reason"])
            usage = data.get("usage")
            if isinstance(usage, Mapping):
                self._usage = parse_usage(usage, self._usage)
        elif kind == STOP_EVENT:
            self.done = True
        elif kind == "error":
            message, error_type = details_from_object(data)
            raise classify_error(
                None, message, error_type, provider=self.provider, model=self.model, key_env=self.key_env
            )
        # content_block_stop, ping and event types added later carry nothing crab needs.
        return []

    def _start(self, data: Mapping[str, Any]) -> list[StreamEvent]:
        index = int(data.get("index", len(self._blocks)))
        block = data.get("content_block") or {}
        kind = str(block.get("type") or "")
        if kind == "tool_use" and self._continues_call(block):
            # Deltas at this index go on building the call the block before started.
            self._open[index] = self._blocks[-1]
            return []
        events: list[StreamEvent] = []
        if kind == "text":
            text = str(block.get("text") or "")
            started = _Block("text", [text] if text else [])
            events = [TextDelta(text)] if text else []
        elif kind == "thinking":
            text = str(block.get("thinking") or "")
            signature = str(block.get("signature") or "")
            started = _Block("thinking", [text] if text else [], [signature] if signature else [])
            events = [ThinkingDelta(text)] if text else []
        elif kind == "redacted_thinking":
            started = _Block("redacted_thinking", signature=[str(block.get("data") or "")])
        elif kind == "tool_use":
            started = _Block(
                "tool_use",
                id=str(block.get("id") or ""),
                name=str(block.get("name") or ""),
                initial_input=block.get("input"),
            )
        else:
            # Server tool blocks and future types are kept out of the message crab replays.
            started = _Block(kind)
        # Kept in the order started, so a server that reuses an index loses no block.
        self._blocks.append(started)
        self._open[index] = started
        return events

    def _continues_call(self, block: Mapping[str, Any]) -> bool:
        """True when a new tool_use block repeats the id (and name) of the tool_use block just before."""
        last = self._blocks[-1] if self._blocks else None
        call_id = str(block.get("id") or "")
        name = str(block.get("name") or "")
        return (
            last is not None
            and last.kind == "tool_use"
            and bool(call_id)
            and call_id == last.id
            and name in ("", last.name)
        )

    def _delta(self, data: Mapping[str, Any]) -> list[StreamEvent]:
        block = self._open.get(int(data.get("index", -1)))
        delta = data.get("delta") or {}
        kind = delta.get("type")
        if block is None:
            raise ProviderError(f"{self.provider}: the stream sent a delta for a block it never started", "stream")
        if kind == "text_delta":
            text = str(delta.get("text") or "")
            block.parts.append(text)
            return [TextDelta(text)] if text else []
        if kind == "thinking_delta":
            text = str(delta.get("thinking") or "")
            block.parts.append(text)
            return [ThinkingDelta(text)] if text else []
        if kind == "input_json_delta":
            block.parts.append(str(delta.get("partial_json") or ""))
        elif kind == "signature_delta":
            block.signature.append(str(delta.get("signature") or ""))
        return []

    def finish(self) -> list[StreamEvent]:
        """The closing events of a complete stream: tool calls, then ``MessageEnd`` (with usage)."""
        texts: list[str] = []
        thinking: list[Thinking] = []
        calls: list[ToolCall] = []
        taken: set[str] = set()
        for position, block in enumerate(self._blocks):
            if block.kind == "text":
                texts.append("".join(block.parts))
            elif block.kind == "thinking":
                thinking.append(Thinking("".join(block.parts), signature="".join(block.signature) or None))
            elif block.kind == "redacted_thinking":
                # The encrypted payload rides in ``signature``: it is what must be sent back.
                thinking.append(Thinking("", signature="".join(block.signature), redacted=True))
            elif block.kind == "tool_use":
                raw = "".join(block.parts)
                arguments, problem = parse_arguments(raw, block.initial_input)
                calls.append(
                    ToolCall(
                        id=unique_id(block.id or f"toolu_local_{position}", taken),
                        name=block.name,
                        arguments=arguments,
                        raw_arguments=raw if problem else None,
                        parse_error=problem,
                    )
                )
        stop = _STOP_REASONS.get(self._stop or "", "end")
        if calls and stop == "end":
            stop = "tool_use"
        events: list[StreamEvent] = []
        events.extend(ToolCallEvent(call) for call in calls)
        message = AssistantMessage(
            content="".join(texts),
            tool_calls=tuple(calls),
            thinking=tuple(thinking),
            stop_reason=stop,
            usage=self._usage,
            model=self.model,
            provider=self.provider,
        )
        events.append(MessageEnd(message))
        return events
