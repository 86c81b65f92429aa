"""The request-prefix invariant (issue 38), at the ``ModelRequest`` level: within a session every
request carries the same tools and system prompt, byte for byte once serialised, and its messages
start with the previous request's, unchanged; only a change of the tool set and a compaction break
that, each exactly once. Checked on one long scripted session (tool calls, `$name`, an image, a
subagent, a failed turn, a date change, a resume, tools added mid-session, ``/compact``), in both
tool views, and on the summary request of a compaction the turn starts itself."""

from __future__ import annotations

import json
import types
from collections.abc import Sequence
from typing import Any

import crab
import pytest
from crab._loop import steps, turn
from crab._values.compaction_text import INSTRUCTION
from crab._values.history import NO_REPLY
from crab._values.message_json import message_to_dict
from crab.testing.images import make_png


def tools_bytes(request: crab.ModelRequest) -> bytes:
    specs = [{"name": s.name, "description": s.description, "parameters": s.parameters} for s in request.tools]
    return json.dumps(specs, ensure_ascii=False).encode()


def message_bytes(request: crab.ModelRequest) -> list[bytes]:
    return [json.dumps(message_to_dict(m), ensure_ascii=False, sort_keys=True).encode() for m in request.messages]


def is_summary(request: crab.ModelRequest) -> bool:
    last = request.messages[-1] if request.messages else None
    return isinstance(last, crab.messages.UserMessage) and last.content.startswith(INSTRUCTION)


def continues(before: crab.ModelRequest, after: crab.ModelRequest) -> bool:
    """``after`` keeps ``before``'s prefix: same tools and system bytes, messages extended."""
    old, new = message_bytes(before), message_bytes(after)
    return (
        tools_bytes(after) == tools_bytes(before)
        and after.system.encode() == before.system.encode()
        and new[: len(old)] == old
    )


def breaks(requests: Sequence[crab.ModelRequest]) -> list[tuple[int, str]]:
    """Where a request does not continue the one before it, and what changed (summary requests
    must continue the one before them and are then left out of the chain)."""
    found: list[tuple[int, str]] = []
    previous: crab.ModelRequest | None = None
    for index, request in enumerate(requests):
        if previous is not None and not continues(previous, request):
            what = [
                name
                for name, same in (
                    ("tools", tools_bytes(request) == tools_bytes(previous)),
                    ("system", request.system == previous.system),
                    ("messages", message_bytes(request)[: len(previous.messages)] == message_bytes(previous)),
                )
                if not same
            ]
            found.append((index, "+".join(what)))
        if not is_summary(request):
            previous = request
    return found


class Plugin:
    """Two plain tools, a ``delegate`` tool that runs a child, and a tool added mid-session."""

    def __init__(self) -> None:
        self.handle: crab.AgentHandle | None = None

    @crab.hookimpl
    def crab_startup(self, agent: crab.AgentHandle) -> None:
        self.handle = agent

    @crab.hookimpl
    def crab_tools(self, config: crab.Config) -> list[crab.Tool]:
        async def delegate(prompt: str, ctx: crab.ToolContext) -> str:
            """Run a helper on a sub-task."""
            assert ctx.handle is not None
            outcome = await ctx.handle.run_child(ctx, prompt, label="helper", tools=["alpha"], instructions="CHILD")
            return outcome.text

        def alpha(path: str, limit: int = 10) -> str:
            """Read the first lines of a file."""
            return f"lines of {path}"

        def beta(pattern: str) -> str:
            """Search for a pattern."""
            return f"matches of {pattern}"

        return [crab.tool(alpha), crab.tool(beta), crab.tool(delegate)]

    def add_late_tool(self) -> None:
        def late(name: str) -> str:
            """A tool a server announced late."""
            return f"late {name}"

        assert self.handle is not None and self.handle.add_tools("prefix", [crab.tool(late)]) == ["late"]


def script(request: crab.ModelRequest) -> list[dict[str, Any]]:
    """The model: what each request's last message asks for."""
    if is_summary(request):
        return [{"text": "Goal: check files. Progress: read, searched, delegated."}]
    if request.system.endswith("CHILD"):
        done = any(isinstance(m, crab.messages.ToolResultMessage) for m in request.messages)
        return [{"text": "child read it"}] if done else [{"tool": "alpha", "args": {"path": "c.txt"}}]
    last = request.messages[-1]
    if isinstance(last, crab.messages.ToolResultMessage):
        return [{"text": f"done with {last.name}"}]
    prompt = next(
        m.content
        for m in reversed(request.messages)
        if isinstance(m, crab.messages.UserMessage) and m.content[:1] != "["
    )
    for word, reply in (
        ("read", [{"text": "I will use $alpha"}, {"tool": "alpha", "args": {"path": "a.txt"}}]),
        ("search", [{"tool": "beta", "args": {"pattern": 7}}]),  # invalid: gets the schema in its result
        ("delegate", [{"tool": "delegate", "args": {"prompt": "read c.txt"}}]),
        ("fail", [{"error": "server down"}]),
        ("late", [{"tool": "late", "args": {"name": "x"}}]),
    ):
        if prompt.startswith(word):
            return reply
    return [{"text": f"answer to {prompt[:20]}"}]


def long_session(crab_agent: Any, monkeypatch: pytest.MonkeyPatch, view: str) -> tuple[Any, dict[str, int]]:
    """Run the scripted session; returns the harness and the index of the first parent request
    after each event that may change the prefix."""
    monkeypatch.setattr(turn, "today", lambda: "2026-03-01")
    plugin = Plugin()
    h = crab_agent(script, plugins={"prefix": plugin}, config={"crab.tool_view": view})
    image = crab.messages.ImagePart("image/png", make_png(2, 2))
    marks: dict[str, int] = {}

    def parent() -> list[crab.ModelRequest]:
        return [r for r in h.requests if not r.system.endswith("CHILD")]

    assert h.run("read a.txt, use $beta if needed").stop == "end"
    assert h.run("search for 7").stop == "end"
    assert h.run("look at this picture", images=[image]).stop == "end"
    assert h.run("delegate the reading of c.txt").stop == "end"
    assert h.run("fail now").stop == "error"
    assert h.run("after the failure").stop == "end"
    monkeypatch.setattr(turn, "today", lambda: "2026-03-02")
    assert h.run("a new day").stop == "end"
    h.session = h.run_async(h.agent.resume(h.session.id))  # what `crab run -c` reads back
    assert h.run("read it again after the resume").stop == "end"
    plugin.add_late_tool()
    marks["tools"] = len(parent())
    assert h.run("late tool please").stop == "end"
    assert h.run("and after it").stop == "end"
    marks["summary"] = len(parent())
    assert h.run("/compact").text.startswith("compacted:")
    assert h.run("after the compaction").stop == "end"
    assert h.run("read once more").stop == "end"
    return h, marks


@pytest.mark.parametrize("view", ["progressive", "full"])
def test_a_long_session_keeps_its_prefix_except_once_at_a_tool_change_and_a_compaction(
    crab_agent: Any, monkeypatch: pytest.MonkeyPatch, view: str
) -> None:
    h, marks = long_session(crab_agent, monkeypatch, view)
    parent = [r for r in h.requests if not r.system.endswith("CHILD")]
    assert len(parent) >= 18
    # The tool set changes once (only the tools differ); the compaction resets the rest once.
    assert breaks(parent) == [(marks["tools"], "tools"), (marks["summary"] + 1, "system+messages")]
    summaries = [r for r in parent if is_summary(r)]
    assert len(summaries) == 1 and parent.index(summaries[0]) == marks["summary"]
    child = [r for r in h.requests if r.system.endswith("CHILD")]
    assert len(child) == 2 and breaks(child) == []


def test_what_varies_is_recorded_as_messages(crab_agent: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    h, _ = long_session(crab_agent, monkeypatch, "progressive")
    entries = h.run_async(h.store.entries(h.session.id))
    recorded = [e.payload.get("content") for e in entries if e.type == "message"]
    assert recorded.count("[crab] Today is 2026-03-01.") == 1  # told once, not per turn
    assert recorded.count("[crab] Today is 2026-03-02.") in (1, 2)  # the new day (again if summarised away)
    told = [
        m
        for m in h.requests[-1].messages
        if isinstance(m, crab.messages.UserMessage) and m.content.startswith("[crab] Today")
    ]
    assert [m.content for m in told] == ["[crab] Today is 2026-03-02."]  # the context still knows the date
    assert NO_REPLY in recorded  # the failed turn's reply, recorded before the next prompt
    assert any(str(c).startswith("[crab] Full schema of `beta`") for c in recorded)  # the user's $beta
    results = [e.payload.get("content", "") for e in entries if e.type == "tool_result"]
    assert any(r.startswith("invalid arguments for beta") and "Its full schema:" in r for r in results)
    for request in h.requests:
        assert "2026-03" not in request.system  # no date in any prefix


def test_a_compaction_the_turn_starts_asks_for_its_summary_on_the_cached_prefix(crab_agent: Any) -> None:
    def reply(request: crab.ModelRequest) -> list[dict[str, Any]]:
        if is_summary(request):
            return [{"text": "Goal: many questions."}]
        return [{"text": "answer " * 60}]

    h = crab_agent(reply, config={"crab.context_window": 3000})
    for n in range(12):
        assert h.run(f"question {n} " + "why? " * 60).stop == "end"
    requests = h.requests
    summaries = [i for i, r in enumerate(requests) if is_summary(r)]
    assert summaries, "no compaction happened"
    for index in summaries:
        summary, before = requests[index], requests[index - 1]
        assert summary.tools == before.tools and summary.system == before.system
        assert summary.messages[: len(before.messages)] == before.messages
        assert summary.max_tokens is not None and summary.max_tokens <= 2048
    chain = [r for r in requests if not is_summary(r)]
    assert [what for _, what in breaks(chain)] == ["system+messages"] * len(summaries)


def test_at_the_cap_the_request_keeps_its_prefix_and_a_call_made_anyway_is_skipped(crab_agent: Any) -> None:
    ran: list[str] = []

    @crab.tool
    def probe(n: int) -> str:
        """Probe."""
        ran.append(str(n))
        return "ok"

    plugin = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [probe]))
    calls = [[{"tool": "probe", "args": {"n": n}}] for n in range(3)]
    h = crab_agent(calls, plugins={"p": plugin}, config={"crab.max_iterations": 2})
    outcome = h.run("go")
    assert outcome.stop == "max_iterations" and ran == ["0", "1"]  # the third call never ran
    assert breaks(h.requests) == [] and len(h.requests) == 3
    skipped = h.session.messages[-1]
    assert isinstance(skipped, crab.messages.ToolResultMessage) and skipped.content.startswith(
        "Skipped: the iteration cap"
    )


def test_the_session_date_comes_from_its_id_and_a_later_day_is_told_once() -> None:
    assert steps.session_date("20260301T120000-abcdef") is not None
    assert steps.session_date("my-own-id") is None
    started = steps.session_date("20260301T120000-abcdef")
    assert steps.date_note([], started or "", started) is None  # the prompt already says it
    note = steps.date_note([], "2099-01-01", started)
    assert note == "[crab] Today is 2099-01-01."
    assert steps.date_note([crab.messages.UserMessage(note)], "2099-01-01", started) is None
    assert steps.date_note([], "2099-01-01", None) == note  # no session date: told at once


def test_two_steering_messages_in_a_row_get_no_reply_between_them(crab_agent: Any) -> None:
    import asyncio

    holder: dict[str, Any] = {}

    @crab.tool
    async def wait() -> str:
        """Wait while the user steers twice."""
        h = holder["h"]
        holder["steered"] = [
            asyncio.ensure_future(h.agent.handle_input(h.session, text, steer=True))
            for text in ("also left", "and right")
        ]
        for _ in range(10_000):  # until both are queued (each is one step of the event loop away)
            if len(h.session.steering) == 2:
                break
            await asyncio.sleep(0)
        return "waited"

    plugin = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [wait]))
    h = holder["h"] = crab_agent([[{"tool": "wait", "args": {}}], [{"text": "heard both"}]], plugins={"p": plugin})
    assert h.run("start").text == "heard both"
    said = [m.content for m in h.requests[1].messages if not isinstance(m, crab.messages.ToolResultMessage)]
    assert said[-2:] == ["also left", "and right"] and NO_REPLY not in said
    assert breaks(h.requests) == []


def test_a_summary_request_that_does_not_fit_falls_back_to_the_transcript(crab_agent: Any) -> None:
    from crab._loop import compaction

    asked: list[str] = []

    def reply(request: crab.ModelRequest) -> list[dict[str, Any]]:
        if is_summary(request):
            asked.append("in place")
            return [{"error": "prompt is too long", "kind": "context_overflow"}]
        if request.system == compaction.SYSTEM:
            asked.append("transcript")
            return [{"text": "Goal: many questions."}]
        return [{"text": "answer " * 60}]

    h = crab_agent(reply, config={"crab.context_window": 3000})
    for n in range(16):
        assert h.run(f"question {n} " + "why? " * 60).stop == "end"
    done = [e for e in h.events_of(crab.events.CompactionEvent) if e.phase == "done"]
    assert done and asked[:2] == ["in place", "transcript"]
    assert h.session.handoff is not None and h.session.handoff["state"]["summary"] == "Goal: many questions."
