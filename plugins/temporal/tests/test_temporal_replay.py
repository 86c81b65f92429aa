"""Recorded histories of turns (tests/histories, written by test_temporal_turns.py under
``UPDATE_SNAPSHOTS=1``) replay on today's workflow code: a change that would break the turns
running when workers are upgraded (other activities, in another order, other arguments) fails
here. Needs no server: the SDK's ``Replayer`` runs the workflow against each history."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from crab_temporal.workflow import TurnWorkflow, sandbox
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def test_there_are_recorded_histories():
    assert {path.name for path in HISTORIES} >= {
        "turn_with_two_tools.json",
        "turn_after_a_worker_was_killed.json",
        "turn_with_a_refused_question.json",  # its updates replay too
    }


@pytest.mark.parametrize("path", HISTORIES, ids=[path.stem for path in HISTORIES])
def test_a_recorded_turn_replays_on_this_workflow_code(path: Path):
    history = WorkflowHistory.from_json(path.stem, path.read_text(encoding="utf-8"))
    replayer = Replayer(workflows=[TurnWorkflow], workflow_runner=sandbox())
    result = asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False))
    assert result.replay_failure is None, result.replay_failure
