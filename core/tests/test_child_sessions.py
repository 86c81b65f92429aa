"""Child sessions (``AgentHandle.run_child``, ``crab._loop.child``): a tool call runs a turn in a
session of its own, linked by meta, with a subset of the tools, wrapped events (redacted as a
stream of their own), usage in the parent's turn; resume repairs a killed tree; the CLI's tree."""

from __future__ import annotations

import asyncio
from typing import Any

import crab
from crab._cli.sessions import child_dict, child_tree
from crab._contracts.events import ChildEvent, TextDelta, ToolResultEvent, TurnEnded
from crab._contracts.messages import AssistantMessage, ToolCall, UserMessage
from crab._contracts.storage import SessionInfo
from crab._loop.child import PARENT_CALL_META, PARENT_SESSION_META
from crab._secrets.redaction import EventRedactor, Redactor
from crab._values.message_json import message_to_dict
from crab.testing import AgentHarness

KEY = "sk-test-0123456789abcdef"


class Delegating:
    """A ``delegate`` tool that runs its prompt in a child with only the ``echo`` tool."""

    def __init__(self) -> None:
        self.outcomes: list[crab.ChildOutcome] = []

    @crab.hookimpl
    def crab_tools(self, config: crab.Config) -> list[crab.Tool]:
        async def delegate(prompt: str, ctx: crab.ToolContext) -> str:
            """Run a child."""
            assert ctx.handle is not None
            outcome = await ctx.handle.run_child(ctx, prompt, label="helper", tools=["echo"], instructions="CHILD")
            self.outcomes.append(outcome)
            return f"{outcome.text} ({outcome.session_id})"

        def echo(text: str) -> str:
            """Say it back."""
            return text

        def write_it(text: str) -> str:
            """Write."""
            return text

        return [crab.tool(delegate), crab.tool(echo), crab.tool(write_it, permission="write")]


def replies(request: crab.ModelRequest) -> list[dict[str, Any]]:
    if request.system.endswith("CHILD"):
        if len(request.messages) == 1:
            return [
                {"tool": "echo", "id": "e1", "args": {"text": "hi"}},
                {"usage": {"input_tokens": 7, "output_tokens": 1}},
            ]
        return [{"text": "child says hi"}, {"usage": {"input_tokens": 5, "output_tokens": 1}}]
    if any(isinstance(m, crab.messages.ToolResultMessage) for m in request.messages):
        return [{"text": "parent done"}, {"usage": {"input_tokens": 20, "output_tokens": 2}}]
    return [
        {"tool": "delegate", "id": "d1", "args": {"prompt": "say hi"}},
        {"usage": {"input_tokens": 10, "output_tokens": 1}},
    ]


def test_a_tool_runs_a_child_session_linked_to_its_call(tmp_path) -> None:
    plugin = Delegating()
    h = AgentHarness(replies, plugins={"delegating": plugin}, workspace=tmp_path)
    try:
        outcome = h.run("go")
        assert outcome.text == "parent done"
        assert outcome.usage.input_tokens == 10 + 20 + 7 + 5  # the child's usage counts in the turn
        (child,) = plugin.outcomes
        assert (child.stop, child.text, child.tools_called, child.model_calls) == ("end", "child says hi", ("echo",), 2)
        info = h.run_async(h.store.get_session(child.session_id))
        assert info.meta[PARENT_SESSION_META] == h.session.id and info.meta[PARENT_CALL_META] == "d1"
        child_requests = [r for r in h.requests if r.system.endswith("CHILD")]
        assert [s.name for s in child_requests[0].tools] == ["echo"]  # only the tools it was given
        assert [m.content for m in child_requests[0].messages] == ["say hi"]  # its own context
        wrapped = h.events_of(ChildEvent)
        assert wrapped and {e.session_id for e in wrapped} == {child.session_id}
        assert isinstance(wrapped[-1].event, TurnEnded)
        assert not [e for e in h.events_of(TextDelta) if "child" in e.text]
        assert not [e for e in h.events_of(ToolResultEvent) if e.name == "echo"]  # only inside ChildEvents
    finally:
        h.close()


def test_a_childs_deltas_are_redacted_as_a_stream_of_their_own() -> None:
    redactor = EventRedactor(Redactor([KEY]))
    shown: list[crab.events.Event] = []
    half = len(KEY) // 2
    for piece in (f"key {KEY[:half]}", f"{KEY[half:]} end"):
        shown += redactor.events(ChildEvent("k", "helper", "c1", TextDelta(piece)), "p")
    shown += redactor.events(ChildEvent("k", "helper", "c1", TurnEnded("k", "t", "end", KEY)), "p")
    text = "".join(e.event.text for e in shown if isinstance(e, ChildEvent) and isinstance(e.event, TextDelta))
    assert KEY not in text and "[redacted]" in text
    assert all(isinstance(e, ChildEvent) for e in shown)
    nested = redactor.events(ChildEvent("k", "a", "c", ChildEvent("g", KEY, "c2", TextDelta(f"{KEY} "))), "p")
    assert KEY not in str(nested)


def test_resuming_a_parent_pairs_the_calls_left_open_in_its_children(tmp_path) -> None:
    h = AgentHarness([[{"text": "resumed"}]], workspace=tmp_path)
    try:
        store = h.store

        async def killed_tree() -> tuple[str, str, str]:
            parent = await store.create_session(str(tmp_path))
            await store.append(parent.id, "message", message_to_dict(UserMessage("go")))
            call = ToolCall("d1", "delegate", {"prompt": "x"})
            await store.append(parent.id, "message", message_to_dict(AssistantMessage("", tool_calls=(call,))))
            meta = {PARENT_SESSION_META: parent.id, PARENT_CALL_META: "d1"}
            child = await store.create_session(str(tmp_path), meta=meta)
            await store.append(child.id, "message", message_to_dict(UserMessage("x")))
            inner = ToolCall("e1", "echo", {"text": "hi"})
            await store.append(child.id, "message", message_to_dict(AssistantMessage("", tool_calls=(inner,))))
            other = await store.create_session(
                str(tmp_path), meta={PARENT_SESSION_META: parent.id, PARENT_CALL_META: "z9"}
            )
            await store.append(other.id, "message", message_to_dict(AssistantMessage("", tool_calls=(inner,))))
            return parent.id, child.id, other.id

        parent_id, child_id, other_id = h.run_async(killed_tree())
        h.run_async(h.agent.resume(parent_id))
        child_entries = h.run_async(store.entries(child_id))
        assert [e.payload["call_id"] for e in child_entries if e.type == "tool_result"] == ["e1"]
        # A child of a call that did end is not touched (its own resume repairs it).
        assert not [e for e in h.run_async(store.entries(other_id)) if e.type == "tool_result"]
        latest = h.run_async(h.agent.latest_session())
        assert latest is not None and latest.id == parent_id  # a child is never the session to continue
    finally:
        h.close()


def test_cancelling_the_calling_tool_pairs_the_childs_calls_and_cancels(tmp_path) -> None:
    started = asyncio.Event()

    class Slow:
        @crab.hookimpl
        def crab_tools(self, config: crab.Config) -> list[crab.Tool]:
            async def wait(ctx: crab.ToolContext) -> str:
                """Wait."""
                started.set()
                await asyncio.sleep(60)
                return "never"

            async def delegate(ctx: crab.ToolContext) -> str:
                """Run a child that waits."""
                assert ctx.handle is not None
                return (await ctx.handle.run_child(ctx, "wait", label="w", tools=["wait"], instructions="CHILD")).text

            return [crab.tool(wait), crab.tool(delegate)]

    def script(request: crab.ModelRequest) -> list[dict[str, Any]]:
        if request.system.endswith("CHILD"):
            return [{"tool": "wait", "id": "w1", "args": {}}]
        return [{"tool": "delegate", "id": "d1", "args": {}}]

    h = AgentHarness(script, plugins={"slow": Slow()}, workspace=tmp_path)
    try:

        async def go() -> crab.steps.TurnOutcome:
            running = asyncio.ensure_future(h.agent.handle_input(h.session, "go"))
            await asyncio.wait_for(started.wait(), 30)
            h.agent.abort(h.session)
            return await running

        assert h.run_async(go()).stop == "aborted"
        infos = h.run_async(h.store.list_sessions(None))
        (child,) = [i for i in infos if i.meta.get(PARENT_SESSION_META)]
        entries = h.run_async(h.store.entries(child.id))
        assert [e.payload["call_id"] for e in entries if e.type == "tool_result"] == ["w1"]
    finally:
        h.close()


def test_the_cli_tree_of_child_sessions() -> None:
    def info(id: str, parent: str | None, created: float, label: str = "a") -> SessionInfo:
        meta = (
            {PARENT_SESSION_META: parent, PARENT_CALL_META: f"call-{id}", "crab.child_label": label} if parent else {}
        )
        return SessionInfo(id, "/w", created, meta=meta)

    infos = [info("p", None, 0), info("b", "p", 2), info("a", "p", 1), info("g", "a", 3, "deep"), info("x", "q", 1)]
    tree = child_tree(infos, "p")
    assert [(depth, i.id) for depth, i in tree] == [(1, "a"), (2, "g"), (1, "b")]
    nested = child_dict(tree)
    assert [n["id"] for n in nested] == ["a", "b"] and nested[0]["children"][0]["label"] == "deep"
    looped = [info("p", "g", 0), info("g", "p", 1)]
    assert [i.id for _, i in child_tree(looped, "p")] == ["g"]  # hand-edited meta cannot loop


def test_a_childs_tool_question_reaches_the_parents_asker_labelled(tmp_path) -> None:
    asked: list[crab.Question] = []

    async def question(q: crab.Question) -> str | None:
        asked.append(q)
        return "blue"

    class Asking:
        @crab.hookimpl
        def crab_tools(self, config: crab.Config) -> list[crab.Tool]:
            async def colour(ctx: crab.ToolContext) -> str:
                """Ask the user."""
                assert ctx.question is not None
                return str(await ctx.question(crab.Question("which colour?")))

            async def delegate(ctx: crab.ToolContext) -> str:
                """Run a child that asks."""
                assert ctx.handle is not None
                return (
                    await ctx.handle.run_child(ctx, "ask", label="asker", tools=["colour"], instructions="CHILD")
                ).text

            return [crab.tool(colour), crab.tool(delegate)]

    def script(request: crab.ModelRequest) -> list[dict[str, Any]]:
        if request.system.endswith("CHILD"):
            if len(request.messages) == 1:
                return [{"tool": "colour", "id": "q1", "args": {}}]
            return [{"text": "the user said blue"}]
        if len(request.messages) == 1:
            return [{"tool": "delegate", "id": "d1", "args": {}}]
        return [{"text": "done"}]

    h = AgentHarness(script, plugins={"asking": Asking()}, workspace=tmp_path, question=question)
    try:
        assert h.run("go").text == "done"
        assert [q.text for q in asked] == ["[asker] which colour?"]
    finally:
        h.close()


def test_the_plain_renderer_shows_a_child_in_lines_and_never_its_text() -> None:
    import io

    from crab._builtin.render_plain import PlainRenderer
    from crab._contracts.events import ToolCallEvent, TurnStarted
    from crab._contracts.renderers import RenderTarget

    out, err = io.StringIO(), io.StringIO()
    renderer = PlainRenderer(RenderTarget(out, err, color=False))
    renderer.handle(ChildEvent("k1", "explore", "c1", TurnStarted("k1", "t", "find")))
    renderer.handle(ChildEvent("k1", "explore", "c1", ToolCallEvent(ToolCall("r", "read", {"path": "a.py"}))))
    renderer.handle(ChildEvent("k1", "explore", "c1", TextDelta("child prose")))
    inner = ChildEvent("g1", "tiny", "r", TurnEnded("g1", "t", "error", "", None, "broke"))
    renderer.handle(ChildEvent("k1", "explore", "c1", inner))
    renderer.handle(ChildEvent("k1", "explore", "c1", TurnEnded("k1", "t", "end", "found")))
    renderer.close()
    assert out.getvalue() == ""
    assert err.getvalue().splitlines() == [
        "  ↳ explore started (session k1)",
        "  ↳ explore → read(path='a.py')",
        "  ↳ explore › tiny error",
        "  ↳ explore done",
    ]
