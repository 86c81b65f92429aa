"""``crab_permission_request``: a plugin answers a permission question in the user's stead, or
lets them be asked; a failure refuses (fail closed); where nobody can be asked it is never called."""

from __future__ import annotations

from typing import Any

import crab
import pytest
from crab import PermissionRequest
from crab.events import ToolResultEvent
from crab.testing import AgentHarness


class Writer:
    def __init__(self) -> None:
        self.ran = 0

    @crab.hookimpl
    def crab_tools(self) -> list[crab.Tool]:
        @crab.tool(name="touch", permission="write")
        def touch(path: str) -> str:
            """Pretend to write."""
            self.ran += 1
            return f"touched {path}"

        return [touch]


class Answering:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.seen: list[tuple[PermissionRequest, str]] = []

    @crab.hookimpl
    async def crab_permission_request(self, request: PermissionRequest, session_id: str) -> Any:
        self.seen.append((request, session_id))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _run(answer: Any, ask: bool = True) -> tuple[AgentHarness, Writer, Answering, list[PermissionRequest]]:
    asked: list[PermissionRequest] = []

    async def user(request: PermissionRequest) -> str:
        asked.append(request)
        return "once"

    writer, answering = Writer(), Answering(answer)
    replies = [[{"tool": "touch", "args": {"path": "a.txt"}}], [{"text": "done"}]]
    harness = AgentHarness(replies, plugins={"writer": writer, "answering": answering}, ask=user if ask else None)
    try:
        harness.run("go")
    finally:
        harness.close()
    return harness, writer, answering, asked


@pytest.mark.parametrize("answer", ["once", "always"])
def test_an_allowance_runs_the_call_without_asking(answer):
    harness, writer, answering, asked = _run(answer)
    assert writer.ran == 1 and asked == []
    [(request, session_id)] = answering.seen
    assert (request.tool, request.permission, session_id) == ("touch", "write", harness.session.id)


def test_a_refusal_refuses_the_call_without_asking():
    harness, writer, _, asked = _run("deny")
    assert writer.ran == 0 and asked == []
    [result] = harness.events_of(ToolResultEvent)
    assert result.is_error and "refused" in result.content


def test_no_answer_asks_the_user():
    _, writer, answering, asked = _run(None)
    assert writer.ran == 1 and [r.tool for r in asked] == ["touch"] and len(answering.seen) == 1


@pytest.mark.parametrize("answer", [RuntimeError("broken"), "yes please"])
def test_a_hook_that_fails_refuses_the_question(answer):
    harness, writer, _, asked = _run(answer)
    assert writer.ran == 0 and asked == []
    [result] = harness.events_of(ToolResultEvent)
    assert result.is_error


def test_where_nobody_can_be_asked_the_hook_is_not_called():
    _, writer, answering, _ = _run("once", ask=False)
    assert writer.ran == 0 and answering.seen == []  # the gate refuses, as it always does here
