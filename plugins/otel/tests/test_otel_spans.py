"""crab-otel in a real agent loop (scripted provider, memory store) with the SDK's in-memory
exporter and reader: span names, kinds, parents and attributes as the GenAI conventions give them
(semantic-conventions-genai: gen-ai-agent-spans.md, gen-ai-spans.md, gen-ai-metrics.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import crab
import pytest
from crab.testing import ScriptedProvider
from crab_otel import OtelPlugin
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode


@crab.tool(permission="read", timeout=10)
def peek(name: str) -> str:
    """Read a note.

    Args:
        name: Which note.
    """
    return f"the note {name}"


@crab.tool(permission="write", timeout=10)
def scribble(text: str) -> str:
    """Write a note.

    Args:
        text: What to write.
    """
    return "written"


@crab.tool(permission="read", timeout=30)
async def delegate(prompt: str, ctx: crab.ToolContext) -> str:
    """Hand a sub-task to a helper agent.

    Args:
        prompt: The sub-task.
    """
    assert ctx.handle is not None
    outcome = await ctx.handle.run_child(ctx, prompt, label="helper", tools=["peek"])
    return outcome.text


class Tools:
    @crab.hookimpl
    def crab_tools(self, config: crab.Config) -> list[crab.Tool]:
        return [peek, scribble, delegate]


def usage(i: int, o: int, cached: int = 0) -> dict[str, Any]:
    return {"usage": {"input_tokens": i, "output_tokens": o, "cache_read_tokens": cached}}


class Traced:
    """An agent with crab-otel exporting to memory."""

    def __init__(self, crab_agent: Any, replies: Any, **kwargs: Any) -> None:
        self.spans_out = InMemorySpanExporter()
        self.metrics_out = InMemoryMetricReader()
        plugin = OtelPlugin(span_exporter=self.spans_out, metric_reader=self.metrics_out)
        provider = ScriptedProvider(replies) if not isinstance(replies, ScriptedProvider) else replies
        self.h = crab_agent(provider=provider, plugins={"otel": plugin, "tools": Tools()}, **kwargs)

    def run(self, text: str) -> crab.steps.TurnOutcome:
        return self.h.run(text)

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.spans_out.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, [s.name for s in self.spans]
        return found[0]

    def metric_points(self, name: str) -> list[Any]:
        data = self.metrics_out.get_metrics_data()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for point in metric.data.data_points
        ]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def assert_has(got: dict[str, Any], want: dict[str, Any]) -> None:
    wrong = {key: (got.get(key), value) for key, value in want.items() if got.get(key) != value}
    assert not wrong, f"(found, wanted): {wrong}"


TOOL_TURN: Sequence[Sequence[dict[str, Any]]] = [
    [{"tool": "peek", "id": "c1", "args": {"name": "a"}}, usage(100, 10, cached=40)],
    [{"text": "done"}, usage(150, 5)],
]


def test_a_turn_is_one_trace_invoke_agent_over_its_chats_and_tool_calls(crab_agent: Any) -> None:
    t = Traced(crab_agent, TOOL_TURN)
    outcome = t.run("look at a")
    assert outcome.stop == "end"
    turn = t.one("invoke_agent crab")
    chats = t.named("chat scripted")
    tool = t.one("execute_tool peek")
    assert turn.parent is None and turn.kind is SpanKind.INTERNAL
    assert {s.context.trace_id for s in t.spans} == {turn.context.trace_id}
    assert [parent_of(c) for c in chats] == [turn.context.span_id] * 2
    assert parent_of(tool) == turn.context.span_id
    assert_has(
        attrs(turn),
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "crab",
            "gen_ai.conversation.id": t.h.session.id,
            "gen_ai.provider.name": "mock",
            "gen_ai.request.model": "scripted",
            "gen_ai.usage.input_tokens": 100 + 40 + 150,
            "gen_ai.usage.output_tokens": 15,
        },
    )
    first, second = sorted(chats, key=lambda s: s.start_time or 0)
    assert first.kind is SpanKind.CLIENT
    assert_has(
        attrs(first),
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "mock",
            "gen_ai.request.model": "scripted",
            "gen_ai.response.model": "scripted",
            "gen_ai.usage.input_tokens": 140,
            "gen_ai.usage.cache_read.input_tokens": 40,
            "gen_ai.usage.output_tokens": 10,
            "gen_ai.conversation.id": t.h.session.id,
        },
    )
    assert attrs(first)["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert attrs(second)["gen_ai.response.finish_reasons"] == ("stop",)
    assert (first.end_time or 0) <= (tool.start_time or 0)  # the tool ran after its reply ended
    assert tool.kind is SpanKind.INTERNAL
    assert_has(
        attrs(tool),
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "peek",
            "gen_ai.tool.call.id": "c1",
            "gen_ai.tool.type": "function",
            "gen_ai.tool.description": peek.description,
        },
    )
    # Only what the conventions list for each span (plus crab.* ones of crab's own).
    assert not [k for k in attrs(tool) if not k.startswith(("gen_ai.tool.", "gen_ai.operation.", "error."))]
    assert "gen_ai.response.model" not in attrs(turn)
    # Off by default: none of the conventions' opt-in content attributes.
    opt_in = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"}
    opt_in |= {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}
    assert not [k for s in t.spans for k in attrs(s) if k in opt_in]


def test_every_turn_of_a_session_is_a_trace_of_its_own(crab_agent: Any) -> None:
    t = Traced(crab_agent, [[{"text": "one"}], [{"text": "two"}]])
    t.run("first")
    t.run("second")
    turns = t.named("invoke_agent crab")
    assert len(turns) == 2 and len({s.context.trace_id for s in turns}) == 2
    assert {attrs(s)["gen_ai.conversation.id"] for s in turns} == {t.h.session.id}


def test_the_metrics_are_the_two_genai_client_histograms(crab_agent: Any) -> None:
    t = Traced(crab_agent, TOOL_TURN)
    t.run("look at a")
    tokens = t.metric_points("gen_ai.client.token.usage")
    by_type = {p.attributes["gen_ai.token.type"]: p for p in tokens}
    assert by_type["input"].sum == 140 + 150 and by_type["input"].count == 2
    assert by_type["output"].sum == 15
    assert_has(
        dict(by_type["input"].attributes),
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "mock",
            "gen_ai.request.model": "scripted",
            "gen_ai.response.model": "scripted",
        },
    )
    assert "gen_ai.conversation.id" not in by_type["input"].attributes  # metrics stay low-cardinality
    (duration,) = t.metric_points("gen_ai.client.operation.duration")
    assert duration.count == 2
    # One attribute dict serves a call's three records: each keeps only its own keys.
    assert "gen_ai.token.type" not in duration.attributes
    assert dict(duration.attributes) == {
        k: v for k, v in by_type["input"].attributes.items() if k != "gen_ai.token.type"
    }
    assert list(duration.explicit_bounds)[:3] == [0.01, 0.02, 0.04]


def test_a_child_agent_is_an_invoke_agent_span_under_the_tool_call_that_ran_it(crab_agent: Any) -> None:
    def answer(request: crab.ModelRequest) -> list[dict[str, Any]]:
        first = request.messages[0].content if request.messages else ""
        if first == "check b":  # the child's session
            if len(request.messages) == 1:
                return [{"tool": "peek", "id": "k1", "args": {"name": "b"}}, usage(20, 2)]
            return [{"text": "b is fine"}, usage(30, 3)]
        if len(request.messages) == 1:
            return [{"tool": "delegate", "id": "d1", "args": {"prompt": "check b"}}, usage(50, 5)]
        return [{"text": "all fine"}, usage(60, 6)]

    t = Traced(crab_agent, answer)
    assert t.run("go").text == "all fine"
    root = t.one("invoke_agent crab")
    delegate_span = t.one("execute_tool delegate")
    child = t.one("invoke_agent helper")
    assert parent_of(delegate_span) == root.context.span_id
    assert parent_of(child) == delegate_span.context.span_id
    assert attrs(child)["gen_ai.agent.name"] == "helper"
    assert attrs(child)["gen_ai.conversation.id"] != t.h.session.id
    child_chats = [s for s in t.named("chat scripted") if parent_of(s) == child.context.span_id]
    assert len(child_chats) == 2
    (child_tool,) = [s for s in t.named("execute_tool peek")]
    assert parent_of(child_tool) == child.context.span_id
    assert {s.context.trace_id for s in t.spans} == {root.context.trace_id}


def test_a_permission_question_is_a_span_inside_the_tool_call(crab_agent: Any) -> None:
    asked = asyncio.Event()

    async def ask(request: crab.PermissionRequest) -> crab.Answer:
        asked.set()
        return "once"

    t = Traced(
        crab_agent,
        [[{"tool": "scribble", "id": "w1", "args": {"text": "x"}}], [{"text": "ok"}]],
        ask=ask,
    )
    t.run("write it")
    assert asked.is_set()
    tool = t.one("execute_tool scribble")
    wait = t.one("permission scribble")
    assert parent_of(wait) == tool.context.span_id
    assert attrs(wait)["crab.permission.granted"] is True
    assert (tool.start_time or 0) <= (wait.start_time or 0) <= (wait.end_time or 0) <= (tool.end_time or 0)


def test_a_refused_call_ends_its_span_as_a_tool_error(crab_agent: Any) -> None:
    async def ask(request: crab.PermissionRequest) -> crab.Answer:
        return "deny"

    t = Traced(
        crab_agent,
        [[{"tool": "scribble", "id": "w1", "args": {"text": "x"}}], [{"text": "ok"}]],
        ask=ask,
    )
    t.run("write it")
    tool = t.one("execute_tool scribble")
    assert attrs(tool)["error.type"] == "tool_error" and tool.status.status_code is StatusCode.ERROR
    assert attrs(t.one("permission scribble"))["crab.permission.granted"] is False


def test_a_call_of_an_unknown_tool_still_gets_its_span(crab_agent: Any) -> None:
    t = Traced(crab_agent, [[{"tool": "nope", "id": "n1", "args": {}}], [{"text": "ok"}]])
    t.run("go")
    span = t.one("execute_tool nope")
    assert attrs(span)["error.type"] == "tool_error"
    assert parent_of(span) == t.one("invoke_agent crab").context.span_id


def test_a_provider_error_marks_the_chat_span_and_the_turn(crab_agent: Any) -> None:
    t = Traced(crab_agent, [[{"error": "overloaded, try later", "kind": "overloaded"}]])
    assert t.run("go").stop == "error"
    chat = t.one("chat scripted")
    assert attrs(chat)["error.type"] == "overloaded" and chat.status.status_code is StatusCode.ERROR
    turn = t.one("invoke_agent crab")
    assert attrs(turn)["error.type"] == "overloaded" and turn.status.status_code is StatusCode.ERROR
    (duration,) = t.metric_points("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == "overloaded"


def test_a_compaction_is_a_span_over_its_summary_call(crab_agent: Any) -> None:
    t = Traced(crab_agent, [[{"text": "one"}], [{"text": "two"}], [{"text": "Goal: a summary"}]])
    t.run("first")
    t.run("second")
    t.h.run("/compact")
    compaction = t.one("compaction")
    assert attrs(compaction)["crab.compaction.reason"] == "manual"
    summary = [s for s in t.named("chat scripted") if parent_of(s) == compaction.context.span_id]
    assert len(summary) == 1 and attrs(summary[0])["crab.model_call.purpose"] == "compaction"


PLANTED = "sk-planted-0123456789abcdef0123"


def test_content_capture_records_the_conventions_attributes_redacted(
    crab_agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLANTED_API_KEY", PLANTED)
    replies = [
        [{"text": f"calling with {PLANTED}"}, {"tool": "peek", "id": "c1", "args": {"name": PLANTED}}],
        [{"text": f"the key is {PLANTED}"}],
    ]
    t = Traced(crab_agent, replies, config={"plugins": {"otel": {"capture_content": True}}})
    t.run(f"my key is {PLANTED}, keep it")
    everything = [str(v) for s in t.spans for v in attrs(s).values()]
    assert not [v for v in everything if PLANTED in v]
    chats = sorted(t.named("chat scripted"), key=lambda s: s.start_time or 0)
    assert '"role": "user"' in attrs(chats[0])["gen_ai.input.messages"]
    assert "[redacted]" in attrs(chats[0])["gen_ai.input.messages"]
    assert '"type": "text"' in attrs(chats[0])["gen_ai.system_instructions"]
    output = attrs(chats[0])["gen_ai.output.messages"]
    assert '"type": "tool_call"' in output and '"finish_reason": "tool_call"' in output
    assert '"tool_call_response"' in attrs(chats[1])["gen_ai.input.messages"]
    tool = t.one("execute_tool peek")
    assert "[redacted]" in attrs(tool)["gen_ai.tool.call.arguments"]
    assert "[redacted]" in attrs(tool)["gen_ai.tool.call.result"]
    assert "[redacted]" in attrs(t.one("invoke_agent crab"))["gen_ai.output.messages"]


ESCAPED = 'first-line-0123456789\nsecond-"line"\\tail-abcdef'
"""A secret JSON writes differently (a PEM key's newlines, a password's quote or backslash)."""


def test_content_capture_masks_a_secret_that_json_escapes(crab_agent: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ESCAPED_API_KEY", ESCAPED)
    replies = [
        [{"text": f"calling with {ESCAPED}"}, {"tool": "peek", "id": "c1", "args": {"name": ESCAPED}}],
        [{"text": f"the key is {ESCAPED}"}],
    ]
    t = Traced(crab_agent, replies, config={"plugins": {"otel": {"capture_content": True}}})
    t.run(f"my key is {ESCAPED}, keep it")
    everything = [str(v) for s in t.spans for v in attrs(s).values()]
    assert not [v for v in everything if "second-" in v or "first-line-0123456789" in v]
    assert "[redacted]" in attrs(t.one("execute_tool peek"))["gen_ai.tool.call.arguments"]


def test_content_is_held_to_max_content_chars(crab_agent: Any) -> None:
    t = Traced(
        crab_agent,
        [[{"text": "x" * 500}]],
        config={"plugins": {"otel": {"capture_content": True, "max_content_chars": 100}}},
    )
    t.run("go")
    output = attrs(t.one("chat scripted"))["gen_ai.output.messages"]
    assert output.startswith('[{"role": "assistant"') and "cut by crab-otel" in output
    assert len(output) < 200


def test_an_untrusted_project_cannot_turn_content_capture_on(crab_agent: Any) -> None:
    table = {s.name: s for s in __import__("crab_otel.settings").settings.TABLE.settings}
    assert table["capture_content"].trust_only and table["endpoint"].trust_only


def test_telemetry_that_cannot_start_is_one_warning_and_the_turn_still_runs(crab_agent: Any) -> None:
    plugin = OtelPlugin(span_exporter=InMemorySpanExporter(), metric_reader=object())  # not a reader
    h = crab_agent([[{"text": "still here"}]], plugins={"otel": plugin})
    assert h.run("go").text == "still here"
    notices = [e.message for e in h.events_of(crab.events.NoticeEvent) if e.message.startswith("otel:")]
    assert len(notices) == 1 and "tracing is off for this run" in notices[0]


def test_over_the_limit_the_oldest_input_messages_are_left_out_first(crab_agent: Any) -> None:
    t = Traced(
        crab_agent,
        [[{"text": "one"}], [{"text": "two"}]],
        config={"plugins": {"otel": {"capture_content": True, "max_content_chars": 120}}},
    )
    t.run("a" * 80)
    t.run("the newest")
    last = max(t.named("chat scripted"), key=lambda s: s.start_time or 0)
    messages = attrs(last)["gen_ai.input.messages"]
    assert "the newest" in messages and "a" * 80 not in messages
    assert __import__("json").loads(messages)[-1]["parts"][0]["content"] == "the newest"


def test_a_secret_in_a_tool_description_or_call_id_is_masked_even_without_content(
    crab_agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLANTED_API_KEY", PLANTED)

    @crab.tool(timeout=10)
    def leaky() -> str:
        """Uses the key sk-planted-0123456789abcdef0123 to look things up."""
        return "ok"

    class Leaky:
        @crab.hookimpl
        def crab_tools(self, config: crab.Config) -> list[crab.Tool]:
            return [leaky]

    spans_out = InMemorySpanExporter()
    plugin = OtelPlugin(span_exporter=spans_out, metric_reader=InMemoryMetricReader())
    replies = [[{"tool": "leaky", "id": f"call-{PLANTED}", "args": {}}], [{"text": "ok"}]]
    h = crab_agent(replies, plugins={"otel": plugin, "leaky": Leaky()})
    h.run("go")
    everything = [str(v) for s in spans_out.get_finished_spans() for v in (s.attributes or {}).values()]
    assert not [v for v in everything if PLANTED in v]
    assert any("[redacted]" in v for v in everything)


def test_a_bug_in_tracing_a_call_never_refuses_the_call(crab_agent: Any) -> None:
    plugin = OtelPlugin(span_exporter=InMemorySpanExporter(), metric_reader=InMemoryMetricReader())
    h = crab_agent(TOOL_TURN, plugins={"otel": plugin, "tools": Tools()})

    def broken(*args: Any) -> None:
        raise RuntimeError("a bug")

    assert plugin.book is not None
    plugin.book.before_tool_call = broken  # type: ignore[method-assign]
    assert h.run("look at a").stop == "end"
    (result,) = h.events_of(crab.events.ToolResultEvent)
    assert not result.is_error and result.content == "the note a"
    notices = [e.message for e in h.events_of(crab.events.NoticeEvent) if e.message.startswith("otel:")]
    assert notices == ["otel: tracing stopped after an error: RuntimeError: a bug"]


def test_each_turns_tool_spans_have_that_turn_as_parent_and_the_tools_description_of_the_time(
    crab_agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn's parent context and a tool's masked description are made once and kept: a new
    turn, or a description changed in place, must still show on the next call's span."""
    monkeypatch.setenv("PLANTED_API_KEY", PLANTED)

    @crab.tool(timeout=10)
    def mutable() -> str:
        """Looks things up."""
        return "ok"

    class Mutable:
        @crab.hookimpl
        def crab_tools(self, config: crab.Config) -> list[crab.Tool]:
            return [mutable]

    spans_out = InMemorySpanExporter()
    plugin = OtelPlugin(span_exporter=spans_out, metric_reader=InMemoryMetricReader())
    call = [{"tool": "mutable", "args": {}}]
    h = crab_agent([call, call, [{"text": "ok"}], call, [{"text": "ok"}]], plugins={"otel": plugin, "m": Mutable()})
    h.run("one")
    mutable.description = f"Now uses {PLANTED}."
    h.run("two")
    spans = list(spans_out.get_finished_spans())
    turns = sorted((s for s in spans if s.name.startswith("invoke_agent")), key=lambda s: s.start_time or 0)
    tools = sorted((s for s in spans if s.name == "execute_tool mutable"), key=lambda s: s.start_time or 0)
    assert len(turns) == 2 and len(tools) == 3
    assert [t.parent.span_id for t in tools if t.parent] == [turns[0].context.span_id] * 2 + [turns[1].context.span_id]
    described = [attrs(t)["gen_ai.tool.description"] for t in tools]
    assert described == ["Looks things up."] * 2 + ["Now uses [redacted]."]
