"""The activities one at a time, without a server (temporalio's ``ActivityEnvironment``), on a real
agent and store: a retried tool call that changes things and finds itself started gets crab's
stand-in result and never runs again; a read-only one runs again; a call with its result is left
alone; a retried model call whose reply is stored answers with it instead of calling again."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import crab
from crab import steps
from crab_temporal.activities import STARTED, StepActivities
from temporalio.testing import ActivityEnvironment

STAND_IN = "Interrupted: crab was stopped before this tool call finished."


def make_agent(tmp_path: Path, ran: list[str]) -> crab.Agent:
    @crab.tool(permission="write")
    def write_note(text: str) -> str:
        """Write a note."""
        ran.append(f"write:{text}")
        return "written"

    @crab.tool
    def read_note(name: str) -> str:
        """Read a note."""
        ran.append(f"read:{name}")
        return "a note"

    script = tmp_path / "script.json"
    script.write_text('{"replies": [[{"text": "from the model"}]]}')
    return crab.Agent(
        f"mock/{script}",
        plugins=["provider-mock"],
        tools=[write_note, read_note],
        store="memory",
        workspace=tmp_path,
        permissions="yolo",
        user_config=False,
        project_config=False,
        environment=False,
        settings={"plugins.provider-mock.pick": "conversation"},
    )


def environment(attempt: int) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=attempt)
    return env


async def session_with_calls(agent: crab.Agent, *, started: list[str]) -> str:
    """A session whose last reply asks for ``w1`` (write_note) and ``r1`` (read_note); the calls
    named in ``started`` have their started event, as a worker stores it before running one."""
    session = await agent.turn_steps(title="t")
    await session.carry_out(steps.Record("t.1", crab.messages.UserMessage("go")))
    reply = crab.messages.AssistantMessage(
        "",
        tool_calls=(
            crab.messages.ToolCall("w1", "write_note", {"text": "x"}),
            crab.messages.ToolCall("r1", "read_note", {"name": "n"}),
        ),
        stop_reason="tool_use",
    )
    await session.carry_out(steps.Record("t.2", reply))
    for call_id in started:
        await session.mark({"kind": STARTED, "call_id": call_id, "step": "t.5"})
    return session.session_id


async def entries_of(agent: crab.Agent, session_id: str) -> list[crab.storage.Entry]:
    return await (await agent.turn_steps(session_id)).stored()


async def results(agent: crab.Agent, session_id: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for entry in await entries_of(agent, session_id):
        if entry.type == "tool_result":
            found.setdefault(str(entry.payload["call_id"]), []).append(str(entry.payload["content"]))
    return found


def test_a_retried_write_found_started_gets_the_stand_in_and_a_read_runs_again(tmp_path: Path):
    ran: list[str] = []

    async def go() -> tuple[dict[str, list[str]], list[Any]]:
        async with make_agent(tmp_path, ran) as agent:
            activities = StepActivities(agent, heartbeat=1.0)
            session_id = await session_with_calls(agent, started=["w1", "r1"])
            retry = environment(attempt=2)
            got = [
                await retry.run(activities.run_tool, session_id, "t.5", "w1", None),
                await retry.run(activities.run_tool, session_id, "t.5", "r1", None),
                # carried out once more: both have their result now, nothing runs or is recorded
                await retry.run(activities.run_tool, session_id, "t.5", "w1", None),
                await retry.run(activities.run_tool, session_id, "t.5", "r1", None),
            ]
            return await results(agent, session_id), got

    stored, got = asyncio.run(go())
    assert ran == ["read:n"]  # the write never ran again; the read did
    assert stored == {"w1": [STAND_IN], "r1": ["a note"]}
    assert [g["ran"] for g in got] == [False, True, False, False]


def test_a_first_attempt_runs_the_write_once_and_marks_it_started(tmp_path: Path):
    ran: list[str] = []

    async def go() -> tuple[dict[str, list[str]], list[str]]:
        async with make_agent(tmp_path, ran) as agent:
            activities = StepActivities(agent, heartbeat=1.0)
            session_id = await session_with_calls(agent, started=[])
            await environment(attempt=1).run(activities.run_tool, session_id, "t.5", "w1", None)
            entries = await entries_of(agent, session_id)
            kinds = [str(e.payload.get("kind")) for e in entries if e.type == "event"]
            return await results(agent, session_id), kinds

    stored, kinds = asyncio.run(go())
    assert ran == ["write:x"]
    assert stored == {"w1": ["written"]}
    assert kinds.count(STARTED) == 1


def test_a_retried_model_call_answers_with_the_stored_reply(tmp_path: Path):
    ran: list[str] = []

    async def go() -> tuple[dict[str, Any], dict[str, Any], int]:
        async with make_agent(tmp_path, ran) as agent:
            activities = StepActivities(agent, heartbeat=1.0)
            session = await agent.turn_steps(title="t")
            await session.carry_out(steps.Record("t.1", crab.messages.UserMessage("go")))
            session_id = session.session_id
            step = {"id": "t.4", "iteration": 1, "phase": "first", "final": False}
            first = await environment(attempt=1).run(activities.call_model, session_id, step)
            again = await environment(attempt=2).run(activities.call_model, session_id, step)
            entries = await entries_of(agent, session_id)
            replies = sum(1 for e in entries if e.type == "message" and e.payload.get("role") == "assistant")
            return first, again, replies

    first, again, replies = asyncio.run(go())
    assert first["message"]["content"] == "from the model"
    assert again == first
    assert replies == 1
