"""What a worker writes to its log is bounded like every line crab prints (masked, one line, at
most ``LINE_LIMIT`` characters): a session id or a notice is no reason for a megabyte line. A
turn's session id comes from whoever may start workflows on the task queue, not the operator."""

from __future__ import annotations

import asyncio
from pathlib import Path

import crab
import pytest
from crab_temporal.activities import StepActivities
from crab_temporal.cli import print_notice
from crab_temporal.lines import LINE_LIMIT
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment


def test_a_refused_session_with_a_huge_id_is_one_bounded_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    async def refuse() -> None:
        agent = crab.Agent(
            "mock/tour",
            plugins=["provider-mock"],
            store="memory",
            workspace=tmp_path,
            user_config=False,
            project_config=False,
            environment=False,
        )
        try:
            acts = StepActivities(agent, heartbeat=10.0)
            with pytest.raises(ApplicationError):
                await ActivityEnvironment().run(acts.begin, "s" * 200_000)
        finally:
            await agent.aclose()

    asyncio.run(refuse())
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("crab worker: refused a turn"), lines[:1]
    assert len(lines[0]) <= LINE_LIMIT


def test_a_notice_of_any_length_is_one_bounded_line(capsys: pytest.CaptureFixture[str]):
    print_notice(crab.events.NoticeEvent("plugin x failed:\n" + "y" * 100_000, "warning"))
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: plugin x failed: y") and len(lines[0]) <= LINE_LIMIT
