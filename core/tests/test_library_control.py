"""crab as a library: the permission callback and modes, resuming by id, abort, steering and follow-ups."""

from __future__ import annotations

import asyncio
from pathlib import Path

import crab
import pytest
from crab.testing import ScriptedProvider

QUIET = {"user_config": False, "project_config": False, "environment": False}


class Notebook:
    """A write tool that records what it was allowed to do."""

    def __init__(self) -> None:
        self.saved: list[str] = []

        @crab.tool(permission="write")
        def save(text: str) -> str:
            """Save ``text`` in the notebook."""
            self.saved.append(text)
            return f"saved {text}"

        self.tool = save


def two_saves() -> ScriptedProvider:
    return ScriptedProvider(
        [
            [{"tool": "save", "args": {"text": "a"}}, {"tool": "save", "args": {"text": "b"}}],
            [{"text": "done"}],
        ]
    )


def run_with(answer: str | None, *, permissions: str | None = None, sync: bool = True):
    notebook = Notebook()
    asked: list[crab.PermissionRequest] = []

    def ask_sync(request: crab.PermissionRequest) -> str:
        asked.append(request)
        assert answer is not None
        return answer

    async def ask_async(request: crab.PermissionRequest) -> str:
        await asyncio.sleep(0)
        return ask_sync(request)

    callback = None if answer is None else (ask_sync if sync else ask_async)
    with crab.Agent(
        provider=two_saves(),
        tools=[notebook.tool],
        plugins=[],
        permissions=permissions,  # type: ignore[arg-type]
        ask=callback,
        **QUIET,
    ) as agent:
        result = agent.run_sync("save two things")
    return result, notebook.saved, asked


@pytest.mark.parametrize("sync", [True, False], ids=["sync-callback", "async-callback"])
def test_allow_once_asks_for_every_call(crab_home: Path, sync: bool):
    result, saved, asked = run_with("once", sync=sync)
    assert sorted(saved) == ["a", "b"]  # asked in order; the two calls then run side by side
    assert [(r.tool, r.permission) for r in asked] == [("save", "write"), ("save", "write")]
    assert 'save(text="a")' in asked[0].summary
    assert [c.is_error for c in result.tool_calls] == [False, False]


def test_a_question_names_the_tool_call_it_is_about(crab_home: Path):
    result, _saved, asked = run_with("once")
    # API 1.5: an editor attaches each question to the call it shows (crab-acp).
    assert [r.call_id for r in asked] == [c.id for c in result.tool_calls]
    assert all(r.call_id for r in asked)


@pytest.mark.parametrize("sync", [True, False], ids=["sync-callback", "async-callback"])
def test_allow_for_the_session_asks_once(crab_home: Path, sync: bool):
    result, saved, asked = run_with("always", sync=sync)
    # the two calls of one reply run side by side: once "always" is given, either may save first
    assert sorted(saved) == ["a", "b"]
    assert len(asked) == 1
    assert result.ok


@pytest.mark.parametrize("sync", [True, False], ids=["sync-callback", "async-callback"])
def test_deny_refuses_and_the_tool_never_runs(crab_home: Path, sync: bool):
    result, saved, asked = run_with("deny", sync=sync)
    assert saved == []
    assert len(asked) == 2
    assert [c.is_error for c in result.tool_calls] == [True, True]
    assert result.text == "done"


@pytest.mark.parametrize("sync", [True, False], ids=["sync-callback", "async-callback"])
def test_a_callback_that_got_no_answer_refuses_saying_nobody_answered(crab_home: Path, sync: bool):
    # TimeoutError is the callback's "nobody answered" (a wait that ran out): the model is told
    # that, not that the user said no, and not that the program's callback failed.
    notebook = Notebook()

    def nobody_there(request: crab.PermissionRequest) -> str:
        raise TimeoutError

    async def nobody_there_async(request: crab.PermissionRequest) -> str:
        await asyncio.sleep(0)
        raise TimeoutError

    with crab.Agent(
        provider=two_saves(),
        tools=[notebook.tool],
        plugins=[],
        ask=nobody_there if sync else nobody_there_async,
        **QUIET,
    ) as agent:
        result = agent.run_sync("save two things")
    assert notebook.saved == []
    assert [c.is_error for c in result.tool_calls] == [True, True]
    assert all(
        (c.result or "").startswith("Refused: save needs write permission and nobody answered")
        for c in result.tool_calls
    ), [c.result for c in result.tool_calls]


def test_an_answer_that_is_not_once_or_always_refuses(crab_home: Path):
    result, saved, _asked = run_with("sure, why not")
    assert saved == []
    assert all(c.is_error for c in result.tool_calls)


def test_without_a_callback_ask_mode_refuses_what_is_not_a_read(crab_home: Path):
    result, saved, _asked = run_with(None)
    assert saved == []
    assert "cannot ask the user" in (result.tool_calls[0].result or "")


def test_read_only_refuses_without_asking(crab_home: Path):
    result, saved, asked = run_with("once", permissions="read-only")
    assert saved == [] and asked == []
    assert "read-only" in (result.tool_calls[0].result or "")


def test_yolo_allows_without_asking(crab_home: Path):
    _result, saved, asked = run_with("deny", permissions="yolo")
    assert sorted(saved) == ["a", "b"] and asked == []  # the two calls of one reply run side by side


def sqlite_agent(provider: ScriptedProvider, db: Path) -> crab.Agent:
    return crab.Agent(
        provider=provider,
        plugins=["store-sqlite"],
        store="sqlite",
        settings={"plugins.store-sqlite.path": str(db)},
        **QUIET,
    )


def test_a_session_resumes_by_id_in_a_new_agent(crab_home: Path, tmp_path: Path):
    db = tmp_path / "sessions.db"
    with sqlite_agent(ScriptedProvider([[{"text": "I will remember 42."}]]), db) as agent:
        first = agent.run_sync("remember 42")
    later = ScriptedProvider([[{"text": "You said 42."}]])
    with sqlite_agent(later, db) as agent:
        again = agent.run_sync("what did I say?", session=first.session_id)
        assert first.session_id in asyncio_run_ids(agent)
    assert again.session_id == first.session_id
    said = [m.content for m in later.requests[0].messages if isinstance(m, crab.messages.UserMessage)]
    assert said == ["remember 42", "what did I say?"]
    with sqlite_agent(ScriptedProvider([]), db) as agent, pytest.raises(crab.UsageError, match="no-such-session"):
        agent.run_sync("hi", session="no-such-session")


def asyncio_run_ids(agent: crab.Agent) -> list[str]:
    return agent._sync(agent.session_ids())


def test_a_session_continues_within_one_agent(crab_home: Path):
    provider = ScriptedProvider([[{"text": "one"}], [{"text": "two"}]])

    async def main() -> tuple[crab.RunResult, crab.RunResult]:
        async with crab.Agent(provider=provider, plugins=[], **QUIET) as agent:
            first = await agent.run("a")
            return first, await agent.run("b", session=first.session_id)

    first, second = asyncio.run(main())
    assert first.session_id == second.session_id
    assert len(provider.requests[1].messages) == 3  # a, one, b


class Gate:
    """A tool that waits until the test lets it finish (``started`` is set once it runs)."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

        @crab.tool
        async def wait(label: str) -> str:
            """Wait for the test."""
            self.started.set()
            await self.release.wait()
            return f"waited {label}"

        self.tool = wait


def test_abort_stops_the_run_and_every_call_has_a_result(crab_home: Path):
    async def main() -> crab.RunResult:
        gate = Gate()
        provider = ScriptedProvider([[{"tool": "wait", "args": {"label": "x"}}], [{"text": "never"}]])
        async with crab.Agent(provider=provider, tools=[gate.tool], plugins=[], **QUIET) as agent:
            run = agent.run_stream("wait")
            result = asyncio.ensure_future(run.result())
            await asyncio.wait_for(gate.started.wait(), 10)
            assert run.abort() is True
            done = await asyncio.wait_for(result, 10)
            assert agent.abort(done.session_id) is False  # nothing runs any more
            return done

    result = asyncio.run(main())
    assert result.stop == "aborted"
    assert [(c.name, c.is_error) for c in result.tool_calls] == [("wait", True)]
    assert result.tool_calls[0].result is not None


def test_steer_reaches_the_running_turn_and_a_follow_up_runs_after_it(crab_home: Path):
    def reply(request: crab.ModelRequest) -> list[dict[str, object]]:
        said = [m.content for m in request.messages if isinstance(m, crab.messages.UserMessage)]
        last = request.messages[-1]
        if said == ["start"]:
            return [{"tool": "wait", "args": {"label": "1"}}]
        if isinstance(last, crab.messages.UserMessage) and last.content == "and then this":
            return [{"text": "follow-up answered"}]
        return [{"text": f"heard: {' | '.join(said)}"}]

    async def main() -> tuple[crab.RunResult, ScriptedProvider]:
        gate = Gate()
        provider = ScriptedProvider(reply)
        async with crab.Agent(provider=provider, tools=[gate.tool], plugins=[], **QUIET) as agent:
            run = agent.run_stream("start")
            result = asyncio.ensure_future(run.result())
            await asyncio.wait_for(gate.started.wait(), 10)
            run.steer("also look left")
            run.follow_up("and then this")
            gate.release.set()
            done = await asyncio.wait_for(result, 10)
            with pytest.raises(crab.UsageError, match="run has ended"):
                run.follow_up("too late")
            return done, provider

    result, provider = asyncio.run(main())
    assert result.turns == 2
    assert result.text == "follow-up answered"
    steered = [m.content for m in provider.requests[1].messages if isinstance(m, crab.messages.UserMessage)]
    assert steered == ["start", "also look left"]
    assert [c.result for c in result.tool_calls] == ["waited 1"]


def test_runs_of_one_agent_in_two_sessions_see_only_their_own_events(crab_home: Path):
    def reply(request: crab.ModelRequest) -> list[dict[str, object]]:
        said = request.messages[0].content if isinstance(request.messages[0], crab.messages.UserMessage) else ""
        if isinstance(request.messages[-1], crab.messages.UserMessage):
            return [{"tool": "wait", "args": {"label": said}}]
        return [{"text": f"answer to {said}"}]

    async def main() -> tuple[list[crab.events.Event], list[crab.events.Event], crab.RunResult, crab.RunResult]:
        gate = Gate()
        async with crab.Agent(provider=ScriptedProvider(reply), tools=[gate.tool], plugins=[], **QUIET) as agent:
            left, right = agent.run_stream("left"), agent.run_stream("right")

            async def drain(run: crab.Run) -> list[crab.events.Event]:
                return [event async for event in run]

            streams = asyncio.gather(drain(left), drain(right))
            await asyncio.wait_for(gate.started.wait(), 10)
            # A second run in a session that has one in progress is refused: steer or follow up.
            with pytest.raises(crab.UsageError, match="run in progress"):
                await agent.run("meanwhile", session=left.session_id)
            gate.release.set()
            left_events, right_events = await asyncio.wait_for(streams, 10)
            return left_events, right_events, await left.result(), await right.result()

    left_events, right_events, left, right = asyncio.run(main())
    assert (left.text, right.text) == ("answer to left", "answer to right")
    assert [e.input for e in left_events if isinstance(e, crab.events.TurnStarted)] == ["left"]
    assert [e.input for e in right_events if isinstance(e, crab.events.TurnStarted)] == ["right"]
    assert [e.content for e in left_events if isinstance(e, crab.events.ToolResultEvent)] == ["waited left"]
    assert [e.content for e in right_events if isinstance(e, crab.events.ToolResultEvent)] == ["waited right"]


def test_a_callback_that_raises_refuses_every_call_and_says_it_was_the_callback(crab_home: Path):
    notebook = Notebook()
    events: list[crab.events.Event] = []

    def ask(request: crab.PermissionRequest) -> str:
        raise RuntimeError("callback broke")

    with crab.Agent(
        provider=ScriptedProvider([[{"tool": "save", "args": {"text": "a"}}], [{"text": "done"}]] * 2),
        tools=[notebook.tool],
        plugins=[],
        ask=ask,
        listeners=[events.append],
        **QUIET,
    ) as agent:
        results = [agent.run_sync("save"), agent.run_sync("save again")]
    assert notebook.saved == []
    for result in results:
        [call] = result.tool_calls
        assert call.is_error
        assert "permission callback raised RuntimeError: callback broke" in (call.result or ""), call.result
    warnings = [e for e in events if isinstance(e, crab.events.NoticeEvent) and e.level == "warning"]
    assert len(warnings) == 1 and "permission callback raised RuntimeError" in warnings[0].message
