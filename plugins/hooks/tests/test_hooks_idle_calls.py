"""Tool calls where no hook command runs are answered None at once by the plugin's hooks (no
coroutine to make and await for every call of a run that configured no hooks)."""

from __future__ import annotations

import inspect
from pathlib import Path

import crab
from crab_hooks import HooksPlugin


def test_tool_calls_cost_nothing_without_tool_hooks_and_run_them_with(tmp_path: Path) -> None:
    plugin = HooksPlugin()
    read = crab.Tool("read", "", {"type": "object"}, lambda a, c: "", permission="read")
    ctx = crab.ToolContext(session_id="s1", workspace=tmp_path, call_id="c1")
    call, result = crab.messages.ToolCall("c1", "read", {}), crab.ToolResult("ok")
    assert plugin.crab_before_tool_call(call, read, ctx) is None
    assert plugin.crab_after_tool_call(call, read, result, ctx) is None
    hook = {"hooks": [{"type": "command", "command": "true"}]}
    plugin.hooks.hooks.add({"PreToolUse": [hook], "PostToolUse": [hook]}, "test", tmp_path, 10.0)
    for answer in (plugin.crab_before_tool_call(call, read, ctx), plugin.crab_after_tool_call(call, read, result, ctx)):
        assert inspect.isawaitable(answer)
        answer.close()  # type: ignore[union-attr]  # running hook commands is other tests' subject
