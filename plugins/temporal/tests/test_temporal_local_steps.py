"""A turn's cheap steps run as local activities (crab_temporal.placement): no task round trip
through Temporal's server for the start, the hooks and the model calls, while every tool call
stays a regular activity any worker may take. A local step carried out again after its worker
died starts at attempt 1 on another worker: it still records nothing twice. A turn recorded this
way replays on today's code, and so do the histories recorded before (test_temporal_replay.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import crab
import pytest
from crab import steps
from crab_temporal.activities import StepActivities
from crab_temporal.settings import TemporalSettings
from crab_temporal.worker import bounds
from crab_temporal.workflow import TurnWorkflow, sandbox
from temporalio.client import WorkflowHistory
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Replayer

sys.path.insert(0, str(Path(__file__).parent))

from temporal_site import Site, temporal_binary


def make_agent(tmp_path: Path) -> crab.Agent:
    script = tmp_path / "script.json"
    script.write_text('{"replies": [[{"text": "from the model"}]]}')
    return crab.Agent(
        f"mock/{script}",
        plugins=["provider-mock"],
        store="memory",
        workspace=tmp_path,
        permissions="yolo",
        user_config=False,
        project_config=False,
        environment=False,
        settings={"plugins.provider-mock.pick": "conversation"},
    )


def local_environment() -> ActivityEnvironment:
    """A local activity's first attempt: what a worker that takes over a dead one's workflow task sees."""
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, attempt=1, is_local=True)
    return env


def test_a_local_model_call_carried_out_again_at_attempt_1_answers_with_the_stored_reply(tmp_path: Path):
    async def go() -> tuple[dict[str, Any], dict[str, Any], list[str]]:
        async with make_agent(tmp_path) as agent:
            activities = StepActivities(agent, heartbeat=1.0)
            session = await agent.turn_steps(title="t")
            await session.carry_out(steps.Record("t.1", crab.messages.UserMessage("go")))
            step = {"id": "t.4", "iteration": 1, "phase": "first", "final": False}
            first = await local_environment().run(activities.call_model, session.session_id, step)
            again = await local_environment().run(activities.call_model, session.session_id, step)
            entries = await session.stored()
            roles = [str(e.payload.get("role")) for e in entries if e.type == "message"]
            return first, again, roles

    first, again, roles = asyncio.run(go())
    assert first["message"]["content"] == "from the model"
    assert again == first
    assert roles == ["user", "assistant"]  # one reply: the model was not asked twice


def test_a_local_record_carried_out_again_stores_its_message_once_and_the_same_text_twice_when_sent_twice(
    tmp_path: Path,
):
    async def go() -> list[str]:
        async with make_agent(tmp_path) as agent:
            activities = StepActivities(agent, heartbeat=1.0)
            session = await agent.turn_steps(title="t")
            yes = {"role": "user", "content": "yes"}
            for step_id in ("t.2", "t.2", "t.7", "t.7"):  # t.7: the user steered with the same text again
                await local_environment().run(
                    activities.carry_out, session.session_id, "record", {"id": step_id, "message": yes}
                )
            return [str(e.payload.get("content")) for e in await session.stored() if e.type == "message"]

    assert asyncio.run(go()) == ["yes", "yes"]


def test_a_worker_runs_no_more_local_steps_at_once_than_activities():
    # The premise: throughput comes from more workers, so one worker's bound covers the
    # steps it runs locally too (in slots of their own: see worker.bounds).
    got = bounds(TemporalSettings(max_concurrent_activities=3))
    assert (got["max_concurrent_activities"], got["max_concurrent_local_activities"]) == (3, 3)


def _events(history: str) -> list[dict[str, Any]]:
    return list(json.loads(history)["events"])


@pytest.mark.slow
@pytest.mark.xdist_group("crab-temporal-local-steps")
def test_a_turn_runs_its_model_calls_locally_its_tools_as_activities_and_replays(site: Site):
    marker = site.root / "effects"
    site.write_script(
        [
            [{"tool": "bash", "args": {"command": f"echo once >> {marker}"}}],
            [{"tool": "ls", "args": {"path": "."}}],
            [{"text": "all done"}],
        ]
    )
    site.start_worker("a")
    result = site.run("go on", "-o", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["stop"], doc["text"]) == ("end", "all done")
    assert marker.read_text().splitlines() == ["once"]

    binary = temporal_binary()
    assert binary is not None
    command = [binary, "workflow", "show", "-w", f"crab-session-{doc['session_id']}", "--address", site.address]
    history = subprocess.run([*command, "--output", "json"], capture_output=True, text=True, timeout=60, check=True)
    events = _events(history.stdout)
    scheduled = [
        e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for e in events
        if e["eventType"] in ("EVENT_TYPE_ACTIVITY_TASK_SCHEDULED", "ActivityTaskScheduled")
    ]
    markers = [
        e["markerRecordedEventAttributes"]["markerName"]
        for e in events
        if e["eventType"] in ("EVENT_TYPE_MARKER_RECORDED", "MarkerRecorded")
    ]
    # Regular: the two tool calls. Local (a marker each): begin, the prompt's submit and record,
    # three model calls, the end check; and the patches' own markers (local steps, the turn's ceiling).
    assert scheduled == ["crab.run_tool", "crab.run_tool"], scheduled
    assert markers.count("core_local_activity") == 7, markers
    assert markers.count("core_patch") == 2, markers
    completed = [e for e in events if e["eventType"] in ("EVENT_TYPE_WORKFLOW_TASK_COMPLETED", "WorkflowTaskCompleted")]
    # Local steps ride in the workflow tasks around them (4 here on an idle machine) instead of one
    # task each (10). A loaded machine may add extensions: the SDK extends a task a local step still
    # holds every 1.6 s (80% of the turn's 2 s task timeout), so the bound is "fewer than one a step".
    local = markers.count("core_local_activity")
    assert len(completed) < len(scheduled) + local + 1, len(completed)

    replayed = WorkflowHistory.from_json("local-steps", history.stdout)
    replayer = Replayer(workflows=[TurnWorkflow], workflow_runner=sandbox())
    outcome = asyncio.run(replayer.replay_workflow(replayed, raise_on_replay_failure=False))
    assert outcome.replay_failure is None, outcome.replay_failure
