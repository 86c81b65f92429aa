"""The tool-call hooks answer None at once for calls no checkpoint is taken for (a read, a call
outside a turn): such a call gets no coroutine to make and await."""

from __future__ import annotations

import inspect
from pathlib import Path

import crab
from crab_checkpoints import CheckpointsPlugin


def _tool(name: str, permission: str) -> crab.Tool:
    return crab.Tool(name, "", {"type": "object"}, lambda a, c: "", permission=permission)  # type: ignore[arg-type]


def test_only_calls_that_may_write_in_a_turn_reach_the_recorder(tmp_path: Path) -> None:
    plugin = CheckpointsPlugin()
    read, write = _tool("read", "read"), _tool("put", "write")
    ctx = crab.ToolContext(session_id="s1", workspace=tmp_path, call_id="c1")
    call = crab.messages.ToolCall("c1", "put", {})
    result = crab.ToolResult("ok")
    assert plugin.crab_before_tool_call(call, write, ctx) is None  # no turn running: nothing to undo
    plugin.crab_event(crab.events.TurnStarted(session_id="s1", turn_id="t1", input="go"), "s1")
    assert plugin.crab_before_tool_call(call, read, ctx) is None
    assert plugin.crab_after_tool_call(call, read, result, ctx) is None
    taken = plugin.crab_before_tool_call(call, write, ctx)
    assert inspect.isawaitable(taken)
    taken.close()  # type: ignore[union-attr]  # not run here: the copies are other tests' subject
