"""The agent loop driven by the scripted provider: tool loops, aborts, queues, guards, caps, faults.

After every scenario the invariant is checked on what was stored: every tool call in the history
built for the provider has exactly one result, and no aborted or failed reply is replayed.
"""

from __future__ import annotations

import asyncio
import types

import crab
import pytest
from crab._contracts.events import ErrorEvent, NoticeEvent, TextDelta, ToolResultEvent, TurnEnded
from crab._contracts.messages import AssistantMessage, ToolResultMessage, UserMessage
from crab._values.history import INTERRUPTED, SKIPPED, build_context, unpaired_calls


def plugin(*tools: crab.Tool, **hooks) -> object:
    namespace = types.SimpleNamespace(**{k: crab.hookimpl(v) for k, v in hooks.items()})
    if tools:
        namespace.crab_tools = crab.hookimpl(lambda config: list(tools))
    return namespace


@crab.tool
def noop(n: int = 0) -> str:
    """Do nothing and say so."""
    return f"noop {n}"


def stored_context(h) -> list:
    entries = h.run_async(h.store.entries(h.session.id))
    return build_context(entries)


def assert_invariant(h) -> None:
    context = stored_context(h)
    assert unpaired_calls(context) == []
    assert all(m.replayable for m in context if isinstance(m, AssistantMessage))
    for request in h.requests:
        assert unpaired_calls(list(request.messages)) == []
        assert all(m.replayable for m in request.messages if isinstance(m, AssistantMessage))


def test_multi_step_tool_loop_feeds_results_back(crab_agent):
    h = crab_agent(
        [
            [{"text": "looking"}, {"tool": "noop", "args": {"n": 1}}],
            [{"tool": "noop", "args": {"n": 2}}, {"tool": "noop", "args": {"n": 3}}],
            [{"text": "all done"}],
        ],
        plugins={"p": plugin(noop)},
    )
    outcome = h.run("go")
    assert outcome.stop == "end" and outcome.text == "all done" and outcome.tool_calls == 3
    last = h.requests[-1].messages
    results = [m.content for m in last if isinstance(m, ToolResultMessage)]
    assert results == ["noop 1", "noop 2", "noop 3"]
    assert [t.name for t in h.requests[0].tools] == ["noop"]
    assert_invariant(h)


def test_concurrent_calls_run_together_and_exclusive_ones_alone(crab_agent):
    both_started = asyncio.Event()
    running = {"now": 0, "max": 0, "exclusive_overlap": False}

    @crab.tool
    async def meet(n: int) -> str:
        """Wait for the other call."""
        running["now"] += 1
        running["max"] = max(running["max"], running["now"])
        if running["now"] == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), 5)
        running["now"] -= 1
        return f"met {n}"

    @crab.tool(exclusive=True)
    async def alone() -> str:
        """Must run alone."""
        if running["now"]:
            running["exclusive_overlap"] = True
        return "alone"

    h = crab_agent(
        [
            [{"tool": "meet", "args": {"n": 1}}, {"tool": "meet", "args": {"n": 2}}, {"tool": "alone", "args": {}}],
            [{"text": "ok"}],
        ],
        plugins={"p": plugin(meet, alone)},
    )
    outcome = h.run("go")
    assert outcome.stop == "end"
    assert running["max"] == 2
    assert running["exclusive_overlap"] is False
    results = [m for m in h.requests[-1].messages if isinstance(m, ToolResultMessage)]
    assert [r.content for r in results] == ["met 1", "met 2", "alone"]  # call order, not finish order


def test_abort_during_streaming_keeps_the_partial_reply_out_of_context(crab_agent):
    h = crab_agent([[{"text": "part one "}, {"delay": 30}, {"text": "never"}], [{"text": "fresh"}]])

    async def scenario():
        task = asyncio.create_task(h.agent.handle_input(h.session, "first"))
        while not h.events_of(TextDelta):
            await asyncio.sleep(0.01)
        assert h.agent.abort(h.session)
        return await task

    outcome = h.run_async(scenario())
    assert outcome.stop == "aborted"
    entries = h.run_async(h.store.entries(h.session.id))
    aborted = [e for e in entries if e.type == "message" and e.payload.get("stop_reason") == "aborted"]
    assert aborted and aborted[0].payload["content"] == "part one "
    assert h.run("second").text == "fresh"
    replayed = [m.content for m in h.requests[-1].messages]
    assert "part one " not in replayed
    assert replayed[-1] == "second"
    assert_invariant(h)


def test_abort_during_a_tool_run_pairs_every_call(crab_agent):
    started = asyncio.Event()

    @crab.tool
    async def slow() -> str:
        """Take forever."""
        started.set()
        await asyncio.sleep(60)
        return "finished"

    h = crab_agent(
        [[{"tool": "slow", "args": {}}, {"tool": "noop", "args": {}}, {"tool": "slow", "args": {}}], [{"text": "x"}]],
        plugins={"p": plugin(slow, noop)},
    )

    async def scenario():
        task = asyncio.create_task(h.agent.handle_input(h.session, "go"))
        await asyncio.wait_for(started.wait(), 5)
        await asyncio.sleep(0.05)
        h.agent.abort(h.session)
        return await task

    outcome = h.run_async(scenario())
    assert outcome.stop == "aborted"
    results = [m for m in stored_context(h) if isinstance(m, ToolResultMessage)]
    assert len(results) == 3
    assert sorted(r.content for r in results) == sorted([INTERRUPTED, INTERRUPTED, "noop 0"])
    assert_invariant(h)
    assert h.events_of(TurnEnded)[-1].stop == "aborted"


def test_abort_with_a_queued_follow_up_loses_nothing(crab_agent):
    h = crab_agent([[{"text": "a"}, {"delay": 30}], [{"text": "answer to the follow-up"}]])

    async def scenario():
        first = asyncio.create_task(h.agent.handle_input(h.session, "first"))
        while not h.events_of(TextDelta):
            await asyncio.sleep(0.01)
        follow = asyncio.create_task(h.agent.handle_input(h.session, "second"))
        await asyncio.sleep(0.05)
        assert len(h.session.follow_ups) == 1  # queued, in flight until written
        h.agent.abort(h.session)
        return await first, await follow

    first, follow = h.run_async(scenario())
    assert first.stop == "aborted"
    assert follow.stop == "end" and follow.text == "answer to the follow-up"
    users = [m.content for m in stored_context(h) if isinstance(m, UserMessage)]
    assert users == ["first", "second"]
    assert_invariant(h)


def test_steering_skips_the_remaining_calls(crab_agent):
    gate = asyncio.Event()

    @crab.tool(exclusive=True)
    async def wait_for_steer() -> str:
        """Block until the test steers."""
        await asyncio.wait_for(gate.wait(), 5)
        return "waited"

    h = crab_agent(
        [
            [{"tool": "wait_for_steer", "args": {}}, {"tool": "noop", "args": {"n": 1}}],
            [{"text": "steered answer"}],
        ],
        plugins={"p": plugin(wait_for_steer, noop)},
    )

    async def scenario():
        turn = asyncio.create_task(h.agent.handle_input(h.session, "start"))
        await asyncio.sleep(0.05)
        steer = asyncio.create_task(h.agent.handle_input(h.session, "actually do X", steer=True))
        await asyncio.sleep(0.05)
        gate.set()
        return await turn, await steer

    outcome, steered = h.run_async(scenario())
    assert outcome.text == "steered answer" and steered.text == "steered answer"
    results = {m.name: m.content for m in stored_context(h) if isinstance(m, ToolResultMessage)}
    assert results == {"wait_for_steer": "waited", "noop": SKIPPED}
    assert h.requests[-1].messages[-1] == UserMessage("actually do X")
    assert_invariant(h)


def test_guard_escalates_warn_refuse_stop(crab_agent):
    same = [{"tool": "noop", "args": {"n": 7}}]
    h = crab_agent([same] * 6, plugins={"p": plugin(noop)})
    outcome = h.run("loop forever")
    assert outcome.stop == "guard"
    results = [e for e in h.events_of(ToolResultEvent)]
    assert results[2].content.startswith("noop 7\n[crab loop guard:")
    assert results[3].is_error and results[3].content.startswith("Refused by the loop guard")
    assert results[4].is_error and results[4].content.startswith("Stopped by the loop guard")
    assert len(h.requests) == 5
    assert any("Stopped by the loop guard" in n.message for n in h.events_of(NoticeEvent))
    assert_invariant(h)


def test_iteration_cap_asks_once_for_a_final_answer_and_runs_no_more_tools(crab_agent):
    h = crab_agent(
        [[{"tool": "noop", "args": {"n": 1}}], [{"tool": "noop", "args": {"n": 2}}], [{"text": "summary"}]],
        plugins={"p": plugin(noop)},
        config={"crab.max_iterations": 2},
    )
    outcome = h.run("go")
    assert outcome.stop == "max_iterations"
    assert outcome.text == "summary"
    # Asked in a recorded note: the request keeps the session's tools and system prompt (its
    # cached prefix); a call the model makes anyway is paired as skipped, never run.
    assert h.requests[-1].tools == h.requests[0].tools and h.requests[-1].system == h.requests[0].system
    assert h.requests[-1].messages[-1].content.startswith("[crab] You have reached the limit of tool calls")
    assert_invariant(h)


def test_invalid_json_unknown_tools_crashes_and_timeouts_become_results(crab_agent):
    @crab.tool
    def crash() -> str:
        """Raise."""
        raise RuntimeError("kaput")

    @crab.tool(timeout=0.2)
    async def hang() -> str:
        """Never return."""
        await asyncio.sleep(30)
        return "no"

    h = crab_agent(
        [
            [
                {"tool": "noop", "raw_args": '{"n": 1'},
                {"tool": "nop", "args": {}},
                {"tool": "crash", "args": {}},
                {"tool": "hang", "args": {}},
            ],
            [{"text": "coped"}],
        ],
        plugins={"p": plugin(noop, crash, hang)},
    )
    outcome = h.run("go")
    assert outcome.stop == "end"
    results = {e.name: e for e in h.events_of(ToolResultEvent)}
    assert results["noop"].is_error and "You sent: '{\"n\": 1'" in results["noop"].content
    assert results["nop"].content.startswith("Unknown tool 'nop'. Did you mean: noop?")
    assert results["crash"].content == "crash failed: RuntimeError: kaput"
    assert results["hang"].content == "hang timed out after 0.2 s and was cancelled."
    assert_invariant(h)


def test_provider_errors_end_the_turn_without_running_tools(crab_agent):
    calls = []

    @crab.tool
    def record() -> str:
        """Record a call."""
        calls.append(1)
        return "ran"

    h = crab_agent(
        [[{"text": "partial"}, {"tool": "record", "args": {}}, {"error": "upstream 500", "kind": "server"}]],
        plugins={"p": plugin(record)},
    )
    outcome = h.run("go")
    assert outcome.stop == "error" and outcome.error == "upstream 500"
    assert calls == []
    assert h.events_of(ErrorEvent)[0].kind == "server"
    assert_invariant(h)
    assert h.run("again").stop == "error"  # the script is exhausted: a clear error, not a crash
    assert "no reply for model call 2" in h.events_of(ErrorEvent)[-1].message


def test_a_provider_that_raises_or_stops_early_is_an_error(crab_agent):
    class Broken:
        name = "broken"

        def models(self):
            return []

        def check(self, model):
            return None

        async def stream(self, request):
            yield crab.events.TextDelta("hi")
            raise crab.ProviderError("overloaded, try later", kind="overloaded")

    class Short(Broken):
        async def stream(self, request):
            yield crab.events.TextDelta("hi")

    for provider, message in ((Broken(), "overloaded, try later"), (Short(), "without a final message")):
        h = crab_agent(provider=provider)
        outcome = h.run("go")
        assert outcome.stop == "error"
        assert message in (outcome.error or "")
        assert_invariant(h)


def test_commands_never_reach_the_model(crab_agent):
    h = crab_agent([[{"text": "literal seen"}]])
    help_out = h.run("/help")
    assert help_out.stop == "command" and "/handoff NAME [summary]" in help_out.text
    unknown = h.run("/hepl")
    assert unknown.error and "Did you mean: help?" in unknown.text
    assert h.requests == []
    assert h.run("//help me").text == "literal seen"
    assert h.requests[0].messages[-1] == UserMessage("/help me")


def test_handoff_starts_context_afresh(crab_agent):
    h = crab_agent([[{"text": "one"}], [{"text": "two"}]])
    h.run("before")
    h.run("/handoff phase-2 we chose sqlite")
    h.run("after")
    request = h.requests[-1]
    assert [m.content for m in request.messages] == ["after"]
    assert "handed off at anchor 'phase-2'" in request.system and "we chose sqlite" in request.system
    resumed = h.run_async(h.agent.resume(h.session.id))
    assert [m.content for m in resumed.messages] == ["after", "two"]


def test_event_observers_and_a_broken_one(crab_agent):
    seen = []

    def good(event, session_id):
        seen.append(event.type)

    def bad(event, session_id):
        raise RuntimeError("observer bug")

    h = crab_agent(
        [[{"tool": "noop", "args": {"n": 1}}], [{"text": "fine"}]],
        plugins={"good": plugin(crab_event=good), "bad": plugin(noop, crab_event=bad)},
    )
    assert h.run("go").stop == "end"
    assert seen[0] == "turn_start" and seen[-1] == "turn_end"
    # only the observer is lost: the plugin stays loaded and its tool keeps working
    assert h.host.records["bad"].status == "loaded"
    assert [e.content for e in h.events_of(ToolResultEvent)] == ["noop 1"]
    line = (
        "plugin bad failed: crab_event raised RuntimeError: observer bug "
        "(its crab_event is not called again in this run)"
    )
    assert h.host.records["bad"].faults == [line.removeprefix("plugin bad failed: ")]
    assert [e.message for e in h.events_of(NoticeEvent)] == [line]


def test_interception_hooks_replace_deny_and_rewrite(crab_agent):
    def before(call, tool, ctx):
        if call.arguments.get("n") == 13:
            return crab.hooks.Deny("unlucky")
        if call.arguments.get("n") == 1:
            return crab.hooks.Replace({"n": 100})
        return None

    def after(call, tool, result, ctx):
        return crab.ToolResult(result.content + " (checked)", result.is_error)

    h = crab_agent(
        [[{"tool": "noop", "args": {"n": 13}}, {"tool": "noop", "args": {"n": 1}}], [{"text": "k"}]],
        plugins={"p": plugin(noop), "hooks": plugin(crab_before_tool_call=before, crab_after_tool_call=after)},
    )
    h.run("go")
    contents = [e.content for e in h.events_of(ToolResultEvent)]
    assert contents == ["unlucky", "noop 100 (checked)"]


def test_before_model_call_can_rewrite_the_request(crab_agent):
    from dataclasses import replace

    def before(request, session_id):
        return replace(request, system=request.system + "\nALWAYS BE BRIEF")

    h = crab_agent([[{"text": "ok"}]], plugins={"p": plugin(crab_before_model_call=before)})
    h.run("go")
    assert h.requests[0].system.endswith("ALWAYS BE BRIEF")


def test_secrets_are_redacted_before_storage(crab_agent, monkeypatch):
    monkeypatch.setenv("EXAMPLE_API_KEY", "sk-test-0123456789abcdef")
    h = crab_agent([[{"text": "your key is sk-test-0123456789abcdef"}]])
    h.run("my key is sk-test-0123456789abcdef")
    entries = h.run_async(h.store.entries(h.session.id))
    dumped = repr([e.payload for e in entries])
    assert "sk-test-0123456789abcdef" not in dumped
    assert "[redacted]" in dumped


def test_system_prompt_is_stored_once_per_distinct_text(crab_agent, tmp_path):
    (tmp_path / "work" / "AGENTS.md").write_text("Always answer in French.")
    h = crab_agent([[{"text": "1"}], [{"text": "2"}]])
    h.run("a")
    h.run("b")
    entries = h.run_async(h.store.entries(h.session.id))
    prompts = [e for e in entries if e.type == "event" and e.payload["kind"] == "system_prompt"]
    assert len(prompts) == 1
    assert "Always answer in French." in prompts[0].payload["text"]
    calls = [e for e in entries if e.type == "event" and e.payload["kind"] == "model_call"]
    assert len(calls) == 2 and calls[0].payload["system_sha256"] == prompts[0].payload["sha256"]


@pytest.mark.parametrize("mode", ["yolo", "read-only"])
def test_shell_escape_is_local_only_and_respects_read_only(crab_agent, mode):
    h = crab_agent(config={"crab.permissions": mode})
    outcome = h.run("!echo hi")
    if mode == "read-only":
        assert outcome.error and "read-only" in outcome.text
    else:
        assert outcome.text == "hi"
    remote = crab_agent(local=False, config={"crab.permissions": "yolo"})
    assert "local terminal" in (remote.run("!echo hi").error or "")


def test_secrets_from_config_and_auth_file_are_redacted(crab_agent, crab_home):
    import json

    (crab_home / "auth.json").write_text(json.dumps({"anthropic": "ant-secret-from-file-123"}))
    h = crab_agent(
        [[{"text": "ok"}]],
        config={"plugins.telegram.bot_token": "12345:telegram-token-abcdef"},
    )
    h.run("tokens: ant-secret-from-file-123 and 12345:telegram-token-abcdef")
    dumped = repr([e.payload for e in h.run_async(h.store.entries(h.session.id))])
    assert "ant-secret-from-file-123" not in dumped
    assert "telegram-token-abcdef" not in dumped


def test_usage_is_priced_once_and_reported_once_per_model_call(crab_agent):
    from crab._contracts.events import MessageEnd, UsageEvent
    from crab._contracts.messages import Usage

    class OldStyle:
        """A provider written before the loop priced usage: it emits its own UsageEvent too."""

        name = "old"

        def models(self):
            return [crab.ModelInfo(id="scripted", provider="old", input_price=1.0, output_price=2.0)]

        def check(self, model):
            return None

        async def stream(self, request):
            usage = Usage(input_tokens=1_000, output_tokens=500)
            yield UsageEvent(usage)
            yield crab.events.TextDelta("ok")
            yield MessageEnd(AssistantMessage(content="ok", usage=usage))

    h = crab_agent(provider=OldStyle())
    outcome = h.run("go")
    assert h.events_of(UsageEvent) == [UsageEvent(Usage(input_tokens=1_000, output_tokens=500, cost=0.002))]
    assert outcome.usage.cost == pytest.approx(0.002)


def test_tool_contexts_of_one_session_share_their_askers_until_whoever_answers_changes(crab_agent):
    """``ModelContext.tool_context`` builds a session's emit and masked, hooked askers once for all
    its calls (a wide reply's 200 calls), and again when the session gets an asker of its own."""
    import asyncio

    from crab import Tool
    from crab._contracts.interception import PermissionRequest
    from crab._contracts.messages import ToolCall

    h = crab_agent([[{"text": "done"}]])
    context, session = h.agent.context, h.session
    tool = Tool("t", "", {"type": "object"}, lambda args, ctx: "ok")
    first, second = (context.tool_context(session, ToolCall(i, "t"), tool) for i in ("c1", "c2"))
    assert (first.call_id, second.call_id) == ("c1", "c2")
    assert first.emit is second.emit and first.ask is second.ask and first.question is second.question
    asked: list[PermissionRequest] = []

    async def mine(request: PermissionRequest) -> str:
        asked.append(request)
        return "once"

    session.ask = mine
    third = context.tool_context(session, ToolCall("c3", "t"), tool)
    assert third.ask is not None and third.ask is not first.ask
    request = PermissionRequest("t", "write", "write a file", (), "c3")
    assert asyncio.run(third.ask(request)) == "once" and [r.call_id for r in asked] == ["c3"]
    assert context.tool_context(session, ToolCall("c4", "t"), tool).ask is third.ask
