"""crab-plan in scripted turns: ``/plan`` and ``permissions = "plan"`` refuse writes with why, the
plan goes to the user as a question, and their answer approves it (plan mode ends, the steps are
the checklist), asks for changes, or leaves; where nobody can answer the plan stays a plan. The
request prefix (system prompt and tools) is the same in and out of plan mode, and a fresh
process's plugin reads plan mode back from the stored history (a resume, a child session)."""

from __future__ import annotations

import types

import crab

from crab_plan import PlanModePlugin

WRITES: list[str] = []


@crab.tool(permission="write")
def save(text: str) -> str:
    """Pretend to write."""
    WRITES.append(text)
    return f"saved {text}"


@crab.tool
def look() -> str:
    """Pretend to read."""
    return "looked"


TOOLS = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [save, look]))
PLAN_CALL = [{"tool": "present_plan", "args": {"plan": "Save a, then b.", "steps": ["save a", "save b"]}}]


def answering(*answers: str | None):
    asked: list[crab.Question] = []

    async def question(q: crab.Question) -> str | None:
        asked.append(q)
        return answers[len(asked) - 1]

    return question, asked


def results(h, name: str) -> list[str]:
    return [e.content for e in h.events_of(crab.events.ToolResultEvent) if e.name == name]


def agent(crab_agent, replies, *, question=None, config=None, ask=None, **kwargs):
    WRITES.clear()
    plugins = {"plan": PlanModePlugin(), "tools": TOOLS}
    return crab_agent(replies, plugins=plugins, question=question, config=config or {}, ask=ask, **kwargs)


async def allow(request):
    return "once"


def test_slash_plan_refuses_writes_until_the_user_approves_and_the_steps_become_the_checklist(crab_agent):
    question, asked = answering("Approve")
    replies = [
        [{"tool": "look", "args": {}}, {"tool": "save", "args": {"text": "early"}}],
        PLAN_CALL,
        [{"tool": "save", "args": {"text": "a"}}],
        [{"text": "done"}],
    ]
    h = agent(crab_agent, replies, question=question, ask=allow)
    assert h.run("/plan").text.startswith("plan mode on:")
    h.run("save things")
    [refusal] = results(h, "save")[:1]
    assert "this session is in plan mode" in refusal
    assert WRITES == ["a"]  # the write before approval never ran; the one after did
    [q] = asked
    assert "Save a, then b." in q.text and "1. save a" in q.text and q.choices == ("Approve", "Leave plan mode")
    [approved] = results(h, "present_plan")
    assert approved.startswith("[plan approved]") and "[ ] save a\n[ ] save b" in approved
    [plan] = h.events_of(crab.events.PlanEvent)
    assert plan.items == (crab.events.PlanItem("save a"), crab.events.PlanItem("save b"))
    # the model was told of plan mode in a note recorded after the prompt, not in the system prompt
    first = h.requests[0]
    assert [m.content for m in first.messages if isinstance(m, crab.messages.UserMessage)][-1].startswith(
        "[plan mode on]"
    )
    assert "plan mode" not in first.system


def test_the_request_prefix_is_the_same_in_and_out_of_plan_mode(crab_agent):
    question, _ = answering("Approve")
    replies = [[{"text": "before"}], PLAN_CALL, [{"text": "approved"}], [{"text": "after"}]]
    h = agent(crab_agent, replies, question=question)
    h.run("hello")
    h.run("/plan")
    h.run("plan it")
    h.run("/plan off")
    h.run("go on")
    systems = {r.system for r in h.requests}
    tools = {tuple((s.name, s.description, str(s.parameters)) for s in r.tools) for r in h.requests}
    assert len(h.requests) == 4 and len(systems) == 1 and len(tools) == 1


def test_words_ask_for_changes_and_the_turn_goes_on_in_plan_mode(crab_agent):
    question, asked = answering("use c instead of b", "Approve")
    replies = [PLAN_CALL, [{"tool": "save", "args": {"text": "x"}}], PLAN_CALL, [{"text": "ok"}]]
    h = agent(crab_agent, replies, question=question, config={"crab.permissions": "plan"})
    h.run("plan it")
    changes, approved = results(h, "present_plan")
    assert "'use c instead of b'" in changes and "still in plan mode" in changes
    assert "plan mode" in results(h, "save")[0] and WRITES == []
    assert approved.startswith("[plan approved]") and len(asked) == 2


def test_leaving_plan_mode_ends_it_without_approving(crab_agent):
    question, _ = answering("Leave plan mode")
    replies = [PLAN_CALL, [{"text": "ok"}], [{"tool": "save", "args": {"text": "later"}}], [{"text": "saved"}]]
    h = agent(crab_agent, replies, question=question, config={"crab.permissions": "plan"}, ask=allow)
    h.run("plan it")
    [left] = results(h, "present_plan")
    assert left.startswith("[plan mode left]") and "Do not carry it out" in left
    assert h.events_of(crab.events.PlanEvent) == []
    h.run("now save")
    assert WRITES == ["later"]  # the session runs as ask again (allowed when asked)


def test_where_nobody_can_answer_the_plan_stays_a_plan(crab_agent):
    replies = [PLAN_CALL, [{"tool": "save", "args": {"text": "x"}}], [{"text": "the plan"}]]
    h = agent(crab_agent, replies, question=None, config={"crab.permissions": "plan"})
    h.run("plan it")
    [said] = results(h, "present_plan")
    assert "Nobody can approve a plan in this run" in said
    assert "plan mode" in results(h, "save")[0] and WRITES == []


def test_present_plan_outside_plan_mode_has_nothing_to_approve(crab_agent):
    question, asked = answering()
    h = agent(crab_agent, [PLAN_CALL, [{"text": "ok"}]], question=question)
    h.run("go")
    [result] = h.events_of(crab.events.ToolResultEvent)
    assert result.is_error and "not in plan mode" in result.content and asked == []


def test_slash_plan_status_and_usage(crab_agent):
    h = agent(crab_agent, [])
    assert h.run("/plan status").text == "plan mode is off"
    h.run("/plan")
    assert h.run("/plan status").text == "plan mode is on"
    assert "usage: /plan" in h.run("/plan maybe").text


def test_a_fresh_process_reads_plan_mode_from_the_stored_history(crab_agent):
    question, _ = answering("Approve")
    first = agent(crab_agent, [[{"text": "planning"}]], question=question)
    first.run("/plan")
    first.run("look first")
    session_id = first.session.id
    # a new plugin object on the same store: the session is in plan mode because its history says so
    second = agent(
        crab_agent,
        [
            [{"tool": "save", "args": {"text": "x"}}],
            PLAN_CALL,
            [{"tool": "save", "args": {"text": "y"}}],
            [{"text": "ok"}],
        ],
        question=question,
        store=first.store,
        ask=allow,
    )
    second.session = second.run_async(second.agent.resume(session_id))
    second.run("go on")
    assert "plan mode" in results(second, "save")[0]
    assert WRITES == ["y"]


def test_a_child_session_follows_its_parents_plan_mode(crab_agent):
    @crab.tool
    async def delegate(ctx: crab.ToolContext) -> str:
        """Run a child agent (as crab-subagents does)."""
        assert ctx.handle is not None
        outcome = await ctx.handle.run_child(ctx, "save it", label="helper")
        return outcome.text

    kid = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [delegate]))
    replies = [
        [{"tool": "delegate", "args": {}}],
        [{"tool": "save", "args": {"text": "by the child"}}],  # the child's first reply
        [{"text": "child done"}],
        [{"text": "parent done"}],
    ]
    WRITES.clear()
    h = crab_agent(replies, plugins={"plan": PlanModePlugin(), "tools": TOOLS, "kid": kid}, ask=allow)
    h.run("/plan")
    h.run("go")
    assert WRITES == []
    refusals = [
        e.event.content for e in h.events_of(crab.events.ChildEvent) if isinstance(e.event, crab.events.ToolResultEvent)
    ]
    assert refusals and "this session is in plan mode" in refusals[0]


def test_the_runs_mode_holds_for_that_run_and_a_switch_for_the_session(crab_agent):
    first = agent(crab_agent, [[{"text": "a plan"}]], config={"crab.permissions": "plan"})
    first.run("plan it")
    # resumed in a run without --plan: the run's mode decides, and the model is told it changed
    second = agent(
        crab_agent,
        [[{"tool": "save", "args": {"text": "x"}}], [{"text": "ok"}], [{"text": "planning"}]],
        store=first.store,
        ask=allow,
    )
    second.session = second.run_async(second.agent.resume(first.session.id))
    second.run("do it")
    assert WRITES == ["x"]
    told = [m.content for m in second.requests[0].messages if isinstance(m, crab.messages.UserMessage)]
    assert [t.split("]")[0] + "]" for t in told if t.startswith("[plan")] == ["[plan mode]", "[plan mode over]"]
    # a /plan switch is the session's (stored with the next prompt): a later run is still in plan mode
    second.run("/plan")
    second.run("plan the next part")
    third = agent(
        crab_agent, [[{"tool": "save", "args": {"text": "y"}}], [{"text": "ok"}]], store=first.store, ask=allow
    )
    third.session = third.run_async(third.agent.resume(first.session.id))
    third.run("go")
    assert WRITES == [] and "plan mode" in results(third, "save")[0]
