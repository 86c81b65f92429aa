"""A tool result's duration is the tool's own run time, never the time the permission question
waited for the user (``sleep 4`` was shown as 9.1 s). A fake clock in ``crab._loop.tool_runner``
makes the figures exact, whatever the machine's load."""

from __future__ import annotations

import types

import crab
import pytest
from crab._contracts.events import ToolResultEvent
from crab._contracts.interception import PermissionRequest
from crab._loop import tool_runner


class Clock:
    """``time`` as ``tool_runner`` reads it: moves only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(tool_runner, "time", fake)
    return fake


def test_the_time_the_user_takes_to_answer_is_not_the_tools(crab_agent, clock: Clock):
    @crab.tool(permission="exec")
    def work(seconds: float) -> str:
        """Pretend to run for a while."""
        clock.now += seconds
        return "worked"

    async def ask(request: PermissionRequest):
        clock.now += 5.0  # the user reads the question and thinks
        return "once"

    plugin = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [work]))
    script = [[{"tool": "work", "args": {"seconds": 4}}], [{"text": "done"}]]
    h = crab_agent(script, plugins={"p": plugin}, ask=ask)
    h.run("go")
    (result,) = h.events_of(ToolResultEvent)
    assert (result.content, result.duration_ms) == ("worked", 4000.0)


def test_a_refused_call_took_no_time(crab_agent, clock: Clock):
    @crab.tool(permission="exec")
    def work() -> str:
        """Never runs here."""
        return "ran"

    async def ask(request: PermissionRequest):
        clock.now += 5.0
        return "deny"

    plugin = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [work]))
    h = crab_agent([[{"tool": "work", "args": {}}], [{"text": "done"}]], plugins={"p": plugin}, ask=ask)
    h.run("go")
    (result,) = h.events_of(ToolResultEvent)
    assert result.is_error and result.duration_ms == 0.0
