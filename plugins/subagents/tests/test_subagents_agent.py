"""The task tool in a real agent loop (scripted provider, memory store): children run at once,
abort with their parent, stay within the depth bound and the parent's permissions, ask through
the parent's channel under their name, and their usage counts in the parent's turn."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import crab
from crab_subagents import SubagentsPlugin
from subagents_fakes import Router, TestTools, entries_by_session, unpaired, usage


def task(call_id: str, prompt: str, agent: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"description": prompt[:20], "prompt": prompt}
    if agent is not None:
        args["agent"] = agent
    return {"tool": "task", "id": call_id, "args": args}


def harness(crab_agent, router: Router, **kwargs: Any):
    plugins = {"subagents": SubagentsPlugin(), "testtools": TestTools()}
    return crab_agent(provider=router, plugins=plugins, **kwargs)


def children(h) -> list[crab.storage.SessionInfo]:
    infos = h.run_async(h.store.list_sessions(None, limit=100))
    return [i for i in infos if i.meta.get("crab.parent_session")]


def test_two_task_calls_of_one_reply_run_at_the_same_time(crab_agent) -> None:
    router = Router(
        {
            "parent": [
                [task("t1", "look at a"), task("t2", "look at b"), usage(100)],
                [{"text": "both done"}, usage(200)],
            ],
            "general": [[{"text": "child answer"}, usage(30)]],
        },
        barrier=2,
    )
    h = harness(crab_agent, router)
    outcome = h.run("split it")
    assert outcome.stop == "end" and outcome.text == "both done"
    results = h.events_of(crab.events.ToolResultEvent)
    assert [r.is_error for r in results] == [False, False], [r.content for r in results]
    assert all(r.content.startswith("child answer\n\n[task: agent general · session ") for r in results)
    # Usage rolls up: the parent's two calls and both children's.
    assert outcome.usage.input_tokens == 100 + 200 + 30 + 30
    # Each child is a session of its own, linked to its call, and its events came wrapped.
    kids = children(h)
    assert sorted(k.meta["crab.parent_call"] for k in kids) == ["t1", "t2"]
    assert {k.meta["crab.parent_session"] for k in kids} == {h.session.id}
    wrapped = h.events_of(crab.events.ChildEvent)
    assert {e.session_id for e in wrapped} == {k.id for k in kids}
    assert not [e for e in h.events_of(crab.events.TextDelta) if e.text == "child answer"]  # never the parent's text
    # The child had its own context: only its prompt, none of the parent's conversation.
    first = router.of("general")[0]
    assert [m.content for m in first.messages] in (["look at a"], ["look at b"])


def test_abort_of_the_parent_aborts_the_children_and_pairs_every_call(crab_agent) -> None:
    router = Router(
        {
            "parent": [[task("t1", "wait a lot"), task("t2", "wait more")]],
            "general": [[{"tool": "slow", "id": "s1", "args": {"seconds": 60}}]],
        }
    )
    h = harness(crab_agent, router)
    TestTools.started = None

    async def go() -> crab.steps.TurnOutcome:
        TestTools.started = asyncio.Event()
        running = asyncio.ensure_future(h.agent.handle_input(h.session, "go"))
        await asyncio.wait_for(TestTools.started.wait(), 30)
        await asyncio.sleep(0.05)
        assert h.agent.abort(h.session)
        return await asyncio.wait_for(running, 30)

    try:
        outcome = h.run_async(go())
    finally:
        TestTools.started = None
    assert outcome.stop == "aborted"
    stored = h.run_async(entries_by_session(h.store))
    assert len(stored) == 3
    for session_id, entries in stored.items():
        assert unpaired(entries) == [], session_id
    child_results = [e for k in children(h) for e in stored[k.id] if e.type == "tool_result"]
    assert child_results and all(e.payload["is_error"] for e in child_results)


def test_depth_is_bounded_a_child_at_the_limit_has_no_task_tool(crab_agent) -> None:
    router = Router(
        {
            "parent": [[task("t1", "delegate")], [{"text": "top done"}]],
            "general": [[task("t2", "delegate further")], [{"text": "child done"}]],
        }
    )
    h = harness(crab_agent, router, config={"plugins.subagents.max_depth": 1})
    assert h.run("go").stop == "end"
    child_request = router.of("general")[0]
    assert "task" not in [spec.name for spec in child_request.tools]
    inner = [e.event for e in h.events_of(crab.events.ChildEvent) if isinstance(e.event, crab.events.ToolResultEvent)]
    assert inner and inner[0].is_error and "Unknown tool 'task'" in inner[0].content
    assert len(children(h)) == 1


def test_depth_two_allows_a_grandchild_and_no_more(crab_agent) -> None:
    router = Router(
        {
            "parent": [[task("t1", "delegate")], [{"text": "top done"}]],
            "general": [[task("t2", "delegate further")], [{"text": "done here"}]],
        }
    )
    h = harness(crab_agent, router)  # max_depth defaults to 2
    assert h.run("go").stop == "end"
    kids = children(h)
    assert len(kids) == 2  # the child and its child
    child = next(k for k in kids if k.meta["crab.parent_session"] == h.session.id)
    grandchild = next(k for k in kids if k is not child)
    assert grandchild.meta["crab.parent_session"] == child.id
    assert "task" in [spec.name for spec in router.of("general")[0].tools]
    assert "task" not in [spec.name for spec in router.of("general")[1].tools]  # the grandchild's
    nested = [e for e in h.events_of(crab.events.ChildEvent) if isinstance(e.event, crab.events.ChildEvent)]
    assert nested and {e.event.session_id for e in nested} == {grandchild.id}


def test_a_childs_permission_question_reaches_the_parents_channel_labelled(crab_agent) -> None:
    asked: list[crab.PermissionRequest] = []

    async def ask(request: crab.PermissionRequest) -> crab.Answer:
        asked.append(request)
        return "once"

    router = Router(
        {
            "parent": [[task("t1", "make a file")], [{"text": "ok"}]],
            "general": [[{"tool": "touch", "id": "w1", "args": {"path": "made.txt"}}], [{"text": "made it"}]],
        }
    )
    h = harness(crab_agent, router, ask=ask)
    assert h.run("go").stop == "end"
    assert [r.summary for r in asked] == ['[general] touch(path="made.txt")']
    assert (Path(h.workspace) / "made.txt").exists()


def test_where_the_parent_cannot_ask_its_child_cannot_either(crab_agent) -> None:
    router = Router(
        {
            "parent": [[task("t1", "make a file")], [{"text": "ok"}]],
            "general": [[{"tool": "touch", "id": "w1", "args": {"path": "made.txt"}}], [{"text": "refused"}]],
        }
    )
    h = harness(crab_agent, router)  # ask mode, nobody to ask
    assert h.run("go").stop == "end"
    inner = [e.event for e in h.events_of(crab.events.ChildEvent) if isinstance(e.event, crab.events.ToolResultEvent)]
    assert inner[0].is_error and "cannot ask the user" in inner[0].content
    assert not (Path(h.workspace) / "made.txt").exists()


def test_a_read_only_agent_is_not_offered_tools_that_write(crab_agent, crab_home: Path, write_agent) -> None:
    write_agent(crab_home / "agents", "look", "name: look\ndescription: looks\npermissions: read-only")
    router = Router(
        {
            "parent": [[task("t1", "look around", agent="look")], [{"text": "ok"}]],
            "look": [[{"text": "looked"}]],
        }
    )
    h = harness(crab_agent, router)
    assert h.run("go").stop == "end"
    offered = [spec.name for spec in router.of("look")[0].tools]
    assert "slow" in offered and "touch" not in offered
    description = h.agent.tools["task"].description  # the full one (a request may carry a stub)
    assert "- look: looks" in description and "- general:" in description
    sent = next(spec.description for spec in router.of("parent")[0].tools if spec.name == "task")
    assert "(agents: look, general)" in sent  # even the one-line stub names the agents


def test_an_unknown_agent_is_an_error_result_naming_the_agents(crab_agent) -> None:
    router = Router({"parent": [[task("t1", "x", agent="nobody")], [{"text": "ok"}]]})
    h = harness(crab_agent, router)
    h.run("go")
    result = h.events_of(crab.events.ToolResultEvent)[0]
    assert result.is_error and "no agent named 'nobody'" in result.content and "general" in result.content


def test_an_untrusted_projects_agent_cannot_widen_its_tools(crab_agent, crab_config, write_agent) -> None:
    write_agent(Path.cwd() / ".crab" / "agents", "builder", "name: builder\ndescription: builds\ntools: touch, slow")
    crab_config({"crab": {"max_iterations": 9}})  # the project has a config, not trusted
    asked: list[crab.PermissionRequest] = []

    async def ask(request: crab.PermissionRequest) -> crab.Answer:
        asked.append(request)
        return "always"

    router = Router(
        {
            "parent": [[task("t1", "build", agent="builder")], [{"text": "ok"}]],
            "builder": [[{"tool": "touch", "id": "w1", "args": {"path": "x.txt"}}], [{"text": "could not"}]],
        }
    )
    h = harness(crab_agent, router, ask=ask)
    assert h.run("go").stop == "end"
    assert [spec.name for spec in router.of("builder")[0].tools] == ["slow"]
    assert "not trusted" in router.of("builder")[0].system
    assert not asked and not (Path(h.workspace) / "x.txt").exists()


def test_a_grandchild_is_never_wider_than_the_child_that_starts_it(crab_agent, crab_config, write_agent) -> None:
    """An untrusted project's agent runs read-only; its own task call must not start a ``general``
    grandchild with every tool (write and exec included) and no read-only bound."""
    write_agent(Path.cwd() / ".crab" / "agents", "scout", "name: scout\ndescription: scouts")
    crab_config({"crab": {"max_iterations": 9}})  # the project has a config, not trusted
    asked: list[crab.PermissionRequest] = []

    async def ask(request: crab.PermissionRequest) -> crab.Answer:
        asked.append(request)
        return "always"

    router = Router(
        {
            "parent": [[task("t1", "scout", agent="scout")], [{"text": "ok"}]],
            "scout": [[task("t2", "build it", agent="general")], [{"text": "scouted"}]],
            "general": [[{"tool": "touch", "id": "w1", "args": {"path": "x.txt"}}], [{"text": "done"}]],
        }
    )
    h = harness(crab_agent, router, ask=ask)
    assert h.run("go").stop == "end"
    assert "touch" not in [spec.name for spec in router.of("scout")[0].tools]
    grandchild = router.of("general")
    assert grandchild and "touch" not in [spec.name for spec in grandchild[0].tools]
    assert not asked and not (Path(h.workspace) / "x.txt").exists()


def test_a_grandchild_gets_only_tools_its_parent_child_has(crab_agent, crab_home: Path, write_agent) -> None:
    write_agent(crab_home / "agents", "narrow", "name: narrow\ndescription: narrow\ntools: slow, task")
    router = Router(
        {
            "parent": [[task("t1", "go narrow", agent="narrow")], [{"text": "ok"}]],
            "narrow": [[task("t2", "anything", agent="general")], [{"text": "narrowed"}]],
            "general": [[{"text": "done"}]],
        }
    )
    h = harness(crab_agent, router)
    assert h.run("go").stop == "end"
    assert sorted(spec.name for spec in router.of("narrow")[0].tools) == ["slow", "task"]
    assert [spec.name for spec in router.of("general")[0].tools] == ["slow"]  # no wider, and at the depth limit
