"""crab's events as OpenTelemetry GenAI spans and metrics: ``invoke_agent`` per turn (a child
session's under the tool call that ran it), ``chat {model}`` per model call, ``execute_tool {name}``
per tool call with the permission wait inside it, ``compaction``; the two client histograms.

``SpanBook`` is fed by the plugin's hooks (``event``, ``before_tool_call``, ``before_model_call``)
and keeps only the open spans of each session. The interceptor hooks guard what they call (an
interceptor that raises would refuse the call); a ``crab_event`` failure is the dispatcher's one line."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from crab import ModelRequest, Tool, ToolContext
from crab.events import (
    ChildEvent,
    CompactionEvent,
    ErrorEvent,
    Event,
    ModelCallEvent,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
    TurnEnded,
    TurnStarted,
)
from crab.messages import ToolCall, Usage
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.metrics import Histogram, Meter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from crab_otel.content import FINISH_REASONS, ContentRecorder

TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
"""The explicit bucket boundaries the GenAI metric conventions give for each histogram."""
TOOL_ERROR = "tool_error"
"""``error.type`` of a tool call whose result is an error (the MCP conventions' word for ``isError``)."""
MAX_DESCRIPTIONS = 512
"""Masked tool descriptions kept (``SpanBook._description``); past it the cache starts afresh."""
ASKING = frozenset({"write", "exec", "network"})
"""Tool permissions the permission gate may ask the user about: their calls get a permission span."""


@dataclass(frozen=True, slots=True)
class Server:
    address: str
    port: int | None


def server_of(base_url: Any) -> Server | None:
    """``server.address``/``server.port`` of a provider's ``base_url`` setting (None: none or not a URL)."""
    if not isinstance(base_url, str) or not base_url:
        return None
    try:
        parts = urlsplit(base_url)
        port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    except ValueError:
        return None
    return Server(parts.hostname, port) if parts.hostname else None


@dataclass
class Metrics:
    duration: Histogram
    tokens: Histogram

    @classmethod
    def on(cls, meter: Meter) -> Metrics:
        return cls(
            meter.create_histogram(
                "gen_ai.client.operation.duration",
                unit="s",
                description="GenAI operation duration.",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            ),
            meter.create_histogram(
                "gen_ai.client.token.usage",
                unit="{token}",
                description="Number of input and output tokens used.",
                explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
            ),
        )


# The per-call records are slotted: eight of them live and die each turn, beside the SDK's own
# objects, and every attribute dict less is less work for the garbage collector.
@dataclass(slots=True)
class _Chat:
    span: Span
    started: float
    attributes: dict[str, Any]
    text: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)


@dataclass(slots=True)
class _ToolSpan:
    span: Span
    started_ns: int
    asks: bool
    token: object | None = None


@dataclass(slots=True)
class _Parent:
    session_id: str
    call_id: str
    label: str


def input_tokens(usage: Usage) -> int:
    """The conventions' ``gen_ai.usage.input_tokens`` counts the whole prompt, cached parts
    included; crab's ``input_tokens`` is the uncached part."""
    return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens


def usage_attributes(usage: Usage) -> dict[str, int]:
    """The usage attributes; the cache counts only when a cache was read or written (each
    attribute costs every span a check and every export its bytes)."""
    found = {"gen_ai.usage.input_tokens": input_tokens(usage), "gen_ai.usage.output_tokens": usage.output_tokens}
    if usage.cache_read_tokens:
        found["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        found["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    return found


class SpanBook:
    """The open spans of every session of one agent, opened and closed by what the loop emits."""

    def __init__(
        self,
        tracer: Tracer,
        *,
        agent_name: str,
        provider: str,
        model: str,
        servers: Callable[[str], Server | None] | None = None,
        metrics: Metrics | None = None,
        content: ContentRecorder | None = None,
        redact: Callable[[str], str] = str,
    ) -> None:
        self.tracer = tracer
        self.agent_name = agent_name
        self.provider = provider
        self.model = model
        self.servers = servers or (lambda provider: None)
        self._server: dict[str, Server | None] = {}
        self.metrics = metrics
        self.content = content
        self.redact = redact  # for what hooks hand over unmasked (events come masked already)
        self.turns: dict[str, Span] = {}
        self.chats: dict[str, _Chat] = {}
        self.tools: dict[tuple[str, str], _ToolSpan] = {}
        self.compactions: dict[str, Span] = {}
        self.parents: dict[str, _Parent] = {}
        self.requests: dict[str, ModelRequest] = {}
        self.errors: dict[str, str] = {}
        # Made once, not per tool call: each turn's span as a parent context, and each tool
        # description masked (a regex pass over up to 1 KiB for every call otherwise).
        self._parents: dict[str, tuple[Span, otel_context.Context]] = {}
        self._descriptions: dict[str, str] = {}
        self._on: dict[str, Any] = {
            "turn_start": self._turn_start,
            "turn_end": self._turn_end,
            "model_call": self._model_call,
            "tool_result": self._tool_result,
            "compaction": self._compaction,
            "error": self._error,
        }
        if content is not None:  # streamed output is kept only for the opt-in output messages
            self._on["text_delta"] = self._text
            self._on["tool_call"] = self._tool_call

    # --- the hooks' entry points -----------------------------------------------------------

    def event(self, event: Event, session_id: str) -> None:
        """One event of the loop; a child session's arrives wrapped, and is unwrapped here."""
        while isinstance(event, ChildEvent):
            if event.session_id not in self.parents:
                self.parents[event.session_id] = _Parent(session_id, event.call_id, event.label)
            session_id, event = event.session_id, event.event
        handler = self._on.get(event.type)
        if handler is not None:
            handler(event, session_id)

    def before_model_call(self, request: ModelRequest, session_id: str) -> None:
        """Keep the request whose call is about to start (its options; its messages when content is on)."""
        self.requests[session_id] = request

    def before_tool_call(self, call: ToolCall, tool: Tool, ctx: ToolContext) -> None:
        """The call is about to pass the interceptors (the permission gate among them): its span
        starts here and is the current span while the tool runs, so what the tool calls out to
        (an MCP server) can carry the trace on."""
        session_id = ctx.session_id
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": self.redact(call.id),  # the model's words, as the events show them
            "gen_ai.tool.type": "function",
        }
        if tool.description:  # a plugin's or an MCP server's text
            attributes["gen_ai.tool.description"] = self._description(tool.description)
        if self.content is not None:
            attributes["gen_ai.tool.call.arguments"] = self.content.value(call.arguments)
        started = time.time_ns()
        span = self.tracer.start_span(
            f"execute_tool {call.name}",
            context=self._turn_context(session_id),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=started,
        )
        entry = _ToolSpan(span, started, asks=tool.permission in ASKING and ctx.ask is not None)
        entry.token = otel_context.attach(trace.set_span_in_context(span))
        self.tools[(session_id, call.id)] = entry

    def close(self) -> None:
        """End every span still open (the agent is closing mid-turn)."""
        for span in [c.span for c in self.chats.values()] + [t.span for t in self.tools.values()]:
            span.end()
        for span in list(self.compactions.values()) + list(self.turns.values()):
            span.end()
        self.chats.clear()
        self.tools.clear()
        self.compactions.clear()
        self.turns.clear()
        self._parents.clear()

    # --- events -----------------------------------------------------------------------------

    @staticmethod
    def _context(parent: Span | None) -> otel_context.Context | None:
        return trace.set_span_in_context(parent) if parent is not None else None

    def _turn_context(self, session_id: str) -> otel_context.Context | None:
        """The context whose span is ``session_id``'s turn (None without one), made once a turn."""
        span = self.turns.get(session_id)
        if span is None:
            return None
        made = self._parents.get(session_id)
        if made is None or made[0] is not span:
            made = self._parents[session_id] = (span, trace.set_span_in_context(span))
        return made[1]

    def _description(self, description: str) -> str:
        """``gen_ai.tool.description``: the first 1,024 characters of ``description``, masked."""
        shown = self._descriptions.get(description)
        if shown is None:
            if len(self._descriptions) >= MAX_DESCRIPTIONS:  # tools an MCP server keeps renaming
                self._descriptions.clear()
            shown = self._descriptions[description] = self.redact(description[:1024])
        return shown

    def _turn_start(self, event: TurnStarted, session_id: str) -> None:
        parent = self.parents.get(session_id)
        name = parent.label if parent is not None else self.agent_name
        context = None
        if parent is not None:
            tool = self.tools.get((parent.session_id, parent.call_id))
            above = tool.span if tool is not None else self.turns.get(parent.session_id)
            context = self._context(above)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": self.provider,
            "gen_ai.agent.name": name,
            "gen_ai.conversation.id": session_id,
            "gen_ai.request.model": self.model,
            "crab.turn.id": event.turn_id,
        }
        if self.content is not None:
            attributes["gen_ai.input.messages"] = self.content._json(
                [{"role": "user", "parts": [{"type": "text", "content": event.input}]}]
            )
        old = self.turns.pop(session_id, None)
        if old is not None:
            old.end()
        self.errors.pop(session_id, None)
        self.turns[session_id] = self.tracer.start_span(
            f"invoke_agent {name}", context=context, kind=SpanKind.INTERNAL, attributes=attributes
        )

    def _turn_end(self, event: TurnEnded, session_id: str) -> None:
        span = self.turns.pop(session_id, None)
        self._parents.pop(session_id, None)
        for key in [k for k in self.tools if k[0] == session_id]:  # an abort left them open
            self.tools.pop(key).span.end()
        chat = self.chats.pop(session_id, None)
        if chat is not None:
            chat.span.end()
        self.requests.pop(session_id, None)
        if span is None:
            return
        # Gathered into one set_attributes: the SDK cleans and locks once per call, not per attribute.
        ending: dict[str, Any] = {"crab.turn.stop": event.stop}
        if event.model and event.model != self.model:  # /model switched this session's model
            ending["gen_ai.request.model"] = event.model
        if event.usage is not None:
            ending.update(usage_attributes(event.usage))
        if self.content is not None and event.text:
            ending["gen_ai.output.messages"] = self.content.output_messages(event.text, (), "end")
        if event.stop in ("error", "guard"):
            ending["error.type"] = self.errors.pop(session_id, None) or event.stop
            span.set_status(Status(StatusCode.ERROR))
        span.set_attributes(ending)
        span.end()
        if session_id in self.parents and session_id not in self.turns:
            del self.parents[session_id]

    def _model_call(self, event: ModelCallEvent, session_id: str) -> None:
        if event.phase == "start":
            self._chat_start(event, session_id)
        else:
            self._chat_end(event, session_id)

    def _chat_start(self, event: ModelCallEvent, session_id: str) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": event.provider,
            "gen_ai.request.model": event.model,
        }
        if event.provider not in self._server:
            self._server[event.provider] = self.servers(event.provider)
        server = self._server[event.provider]
        if server is not None:
            attributes["server.address"] = server.address
            if server.port is not None:
                attributes["server.port"] = server.port
        measured = dict(attributes)  # what the metrics carry: low-cardinality attributes only
        attributes["gen_ai.conversation.id"] = session_id
        if event.purpose != "turn":
            attributes["crab.model_call.purpose"] = event.purpose
        request = self.requests.pop(session_id, None)
        if request is not None:
            if request.max_tokens is not None:
                attributes["gen_ai.request.max_tokens"] = request.max_tokens
            if request.temperature is not None:
                attributes["gen_ai.request.temperature"] = request.temperature
            if self.content is not None:
                attributes["gen_ai.input.messages"] = self.content.input_messages(request.messages)
                if request.system:
                    attributes["gen_ai.system_instructions"] = self.content.system_instructions(request.system)
        parent = self.compactions.get(session_id) or self.turns.get(session_id)
        old = self.chats.pop(session_id, None)
        if old is not None:
            old.span.end()
        span = self.tracer.start_span(
            f"chat {event.model}", context=self._context(parent), kind=SpanKind.CLIENT, attributes=attributes
        )
        self.chats[session_id] = _Chat(span, time.perf_counter(), measured)

    def _chat_end(self, event: ModelCallEvent, session_id: str) -> None:
        chat = self.chats.pop(session_id, None)
        if chat is None:
            return
        span, measured = chat.span, chat.attributes
        ending: dict[str, Any] = {}  # one set_attributes: the SDK cleans and locks once per call
        if event.response_model:
            ending["gen_ai.response.model"] = measured["gen_ai.response.model"] = event.response_model
        reason = FINISH_REASONS.get(event.stop_reason or "", event.stop_reason or "")
        if reason:
            ending["gen_ai.response.finish_reasons"] = (reason,)
        if event.usage is not None:
            ending.update(usage_attributes(event.usage))
        failed = event.error_kind is not None or event.stop_reason == "error"
        if failed:
            ending["error.type"] = event.error_kind or "_OTHER"
            span.set_status(Status(StatusCode.ERROR))
        if self.content is not None and event.stop_reason != "error":
            ending["gen_ai.output.messages"] = self.content.output_messages(
                "".join(chat.text), chat.calls, event.stop_reason
            )
        span.set_attributes(ending)
        span.end()
        if self.metrics is not None:
            duration = time.perf_counter() - chat.started
            if failed:
                self.metrics.duration.record(duration, {**measured, "error.type": ending["error.type"]})
            else:
                self.metrics.duration.record(duration, measured)
            if event.usage is not None:
                # The call's own dict, reused: the SDK copies what it keeps.
                measured["gen_ai.token.type"] = "input"
                self.metrics.tokens.record(input_tokens(event.usage), measured)
                measured["gen_ai.token.type"] = "output"
                self.metrics.tokens.record(event.usage.output_tokens, measured)

    def _text(self, event: TextDelta, session_id: str) -> None:
        chat = self.chats.get(session_id)
        if chat is not None:
            chat.text.append(event.text)

    def _tool_call(self, event: ToolCallEvent, session_id: str) -> None:
        chat = self.chats.get(session_id)
        if chat is not None:
            chat.calls.append(event.call)

    def _tool_result(self, event: ToolResultEvent, session_id: str) -> None:
        now = time.time_ns()
        entry = self.tools.pop((session_id, event.call_id), None)
        if entry is None:  # never reached the interceptors: an unknown tool, bad arguments, skipped
            span = self.tracer.start_span(
                f"execute_tool {event.name}",
                context=self._turn_context(session_id),
                kind=SpanKind.INTERNAL,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": event.name,
                    "gen_ai.tool.call.id": event.call_id,
                    "gen_ai.tool.type": "function",
                },
                start_time=now,
            )
            entry = _ToolSpan(span, now, asks=False)
        span = entry.span
        if entry.token is not None and trace.get_current_span() is span:
            # Only in the task that attached it (the one running the call), where it is still current.
            otel_context.detach(entry.token)  # type: ignore[arg-type]
        if entry.asks:
            ran_ns = int(event.duration_ms * 1_000_000)
            waited_until = max(entry.started_ns, now - ran_ns)
            wait = self.tracer.start_span(
                f"permission {event.name}",
                context=trace.set_span_in_context(span),
                kind=SpanKind.INTERNAL,
                attributes={"crab.tool.call.id": event.call_id, "crab.permission.granted": ran_ns > 0},
                start_time=entry.started_ns,
            )
            wait.end(end_time=waited_until)
        if event.is_error:
            span.set_attribute("error.type", TOOL_ERROR)
            span.set_status(Status(StatusCode.ERROR))
        elif self.content is not None:
            span.set_attribute("gen_ai.tool.call.result", self.content.value(event.content))
        span.end(end_time=now)

    def _compaction(self, event: CompactionEvent, session_id: str) -> None:
        if event.phase == "start":
            old = self.compactions.pop(session_id, None)
            if old is not None:
                old.end()
            self.compactions[session_id] = self.tracer.start_span(
                "compaction",
                context=self._context(self.turns.get(session_id)),
                kind=SpanKind.INTERNAL,
                attributes={
                    "gen_ai.conversation.id": session_id,
                    "crab.compaction.reason": event.reason,
                    "crab.compaction.summarised": event.summarised,
                },
            )
            return
        span = self.compactions.pop(session_id, None)
        if span is None:
            return
        span.set_attributes(
            {
                "crab.compaction.kept": event.kept,
                "crab.compaction.tokens_before": event.tokens_before,
                "crab.compaction.tokens_after": event.tokens_after,
            }
        )
        if event.phase == "failed":
            span.set_attribute("error.type", "compaction_failed")
            span.set_status(Status(StatusCode.ERROR))
        span.end()

    def _error(self, event: ErrorEvent, session_id: str) -> None:
        self.errors[session_id] = event.kind
