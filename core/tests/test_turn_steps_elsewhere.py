"""``crab.Agent.turn_steps``: a session read from the store as a turn's start reads it, on which one
step is carried out as ``crab run`` does (``crab.steps.TurnSteps``); a session it cannot run is
one ``SessionGone`` line (a usage error, exit 2), never a half-read session."""

from __future__ import annotations

import asyncio
from pathlib import Path

import crab
import pytest
from crab import steps
from crab.testing import ScriptedProvider

QUIET = {"user_config": False, "project_config": False, "environment": False, "store": "memory"}


def test_each_step_on_a_fresh_read_records_the_turn_as_one_process_does(tmp_path: Path):
    async def go() -> tuple[list[tuple[str, str]], str]:
        provider = ScriptedProvider([[{"text": "hello there"}]])
        async with crab.Agent(provider=provider, plugins=[], workspace=tmp_path, **QUIET) as agent:
            session = await agent.turn_steps(title="t")
            prompt = steps.Prompt("t1.p0", "hi")
            machine = steps.TurnMachine(session.session_id, "t1", prompt, session.messages)
            step = machine.step
            while not isinstance(step, steps.EndTurn):
                session = await session.again()
                step = machine.send(await session.carry_out(step, prompt))
            entries = await session.stored()
            said = [(str(e.payload["role"]), str(e.payload["content"])) for e in entries if e.type == "message"]
            return said, step.stop

    said, stop = asyncio.run(go())
    assert stop == "end"
    assert said[0] == ("user", "hi") and said[-1] == ("assistant", "hello there")


def test_a_session_it_cannot_run_is_one_usage_line(tmp_path: Path):
    async def go() -> tuple[crab.UsageError, crab.UsageError]:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        async with crab.Agent(provider=ScriptedProvider([]), plugins=[], workspace=tmp_path, **QUIET) as agent:
            with pytest.raises(steps.SessionGone) as unknown:
                await agent.turn_steps("20260101T000000-nothere")
            other = await agent._agent.store.create_session(str(elsewhere), title="x")  # another folder's
            with pytest.raises(steps.SessionGone) as foreign:
                await agent.turn_steps(other.id)
            return unknown.value, foreign.value

    unknown, foreign = asyncio.run(go())
    assert isinstance(unknown, crab.UsageError) and unknown.exit_code == 2
    assert "no session 20260101T000000-nothere in this store" in str(unknown)
    assert f"belongs to {tmp_path / 'elsewhere'}" in str(foreign) and "\n" not in str(foreign)


def test_a_call_carried_out_on_its_own_still_asks_the_user(tmp_path: Path):
    # A RunTools carried out for a driver elsewhere has no machine of this process at that step:
    # the permission question still reaches the agent's ask= and its answer is kept.
    asked: list[str] = []
    ran: list[str] = []

    @crab.tool(permission="write")
    def write_note(text: str) -> str:
        """Write a note."""
        ran.append(text)
        return "written"

    def ask(request: object) -> str:
        asked.append(type(request).__name__)
        return "once"

    async def go() -> list[tuple[str, str]]:
        provider = ScriptedProvider([[{"tool": "write_note", "args": {"text": "x"}}], [{"text": "noted"}]])
        async with crab.Agent(
            provider=provider, plugins=[], tools=[write_note], workspace=tmp_path, ask=ask, **QUIET
        ) as agent:
            session = await agent.turn_steps(title="t")
            prompt = steps.Prompt("t1.p0", "note x")
            machine = steps.TurnMachine(session.session_id, "t1", prompt, session.messages)
            step = machine.step
            while not isinstance(step, steps.EndTurn):
                session = await session.again()
                step = machine.send(await session.carry_out(step, prompt))
            entries = await session.stored()
            return [(str(e.payload["name"]), str(e.payload["content"])) for e in entries if e.type == "tool_result"]

    results = asyncio.run(go())
    assert asked == ["PermissionRequest"]
    assert ran == ["x"]
    assert results == [("write_note", "written")]


def test_a_driver_asks_through_the_sessions_own_question_path_with_secrets_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # A durable engine's client asks the questions its workers' tools put (TurnSteps.ask_user): the
    # agent's own ask=/question=, given the question masked, a question's answer held to its rule.
    secret = "sk-turn-steps-ask-0123456789abcdef"
    monkeypatch.setenv("DEMO_API_KEY", secret)
    shown: list[str] = []

    def ask(request: crab.PermissionRequest) -> str:
        shown.append(request.summary)
        return "always"

    def question(asked: crab.Question) -> str:
        shown.append(asked.text)
        return "2"

    async def go() -> tuple[list[str | None], list[bool]]:
        config = {**QUIET, "environment": True}
        async with crab.Agent(
            provider=ScriptedProvider([]), plugins=[], workspace=tmp_path, ask=ask, question=question, **config
        ) as agent:
            session = await agent.turn_steps(title="t")
            request = crab.PermissionRequest("bash", "exec", f'bash(command="echo {secret}")', (), "c1")
            picked = crab.Question(f"use {secret}?", ("red", "blue"))
            answers = [await session.ask_user(request), await session.ask_user(picked)]
        async with crab.Agent(provider=ScriptedProvider([]), plugins=[], workspace=tmp_path, **QUIET) as nobody:
            alone = await nobody.turn_steps(title="t")
            cannot = [alone.can_ask(request), alone.can_ask(picked), session.can_ask(request)]
            answers.append(await alone.ask_user(picked))
        return answers, cannot

    answers, cannot = asyncio.run(go())
    assert answers == ["always", "blue", None]
    assert cannot == [False, False, True]
    assert shown == ['bash(command="echo [redacted]")', "use [redacted]?"]
