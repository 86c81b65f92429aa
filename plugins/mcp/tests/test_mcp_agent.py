"""MCP tools inside a real agent: the same registry, the permission gate, interceptors, turns."""

from __future__ import annotations

from typing import Any

import crab
import crab_mcp
from crab import Deny, NoticeEvent, ToolResultMessage


def results(h: Any) -> list[ToolResultMessage]:
    return [m for m in h.session.messages if isinstance(m, ToolResultMessage)]


def test_mcp_tools_join_the_registry_and_the_gate_applies_to_them(crab_agent, tiny_cmd):
    h = crab_agent(
        [[{"tool": "tiny_add", "args": {"a": 1, "b": 2}}], [{"text": "done"}]],
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": {"tiny": tiny_cmd()}},
    )
    tool = h.agent.tools["tiny_add"]
    assert tool.plugin == "mcp" and tool.permission == "network"
    assert h.run("add").stop == "end"
    (refused,) = results(h)
    assert refused.is_error and "needs network permission" in refused.content


def test_allowed_calls_reach_the_server_and_it_persists_across_turns(crab_agent, tiny_cmd, unfence):
    h = crab_agent(
        [
            [{"tool": "tiny_pid", "args": {}}],
            [{"text": "one"}],
            [{"tool": "tiny_pid", "args": {}}],
            [{"text": "two"}],
        ],
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": {"tiny": tiny_cmd()}, "crab.permissions": "yolo"},
    )
    h.run("first")
    h.run("second")
    first, second = results(h)
    assert not first.is_error and unfence(first.content) == unfence(second.content)  # one process for both turns


def test_interceptors_see_mcp_calls_like_any_other(crab_agent, tiny_cmd, unfence):
    seen: list[str] = []

    class Guard:
        @crab.hookimpl
        def crab_before_tool_call(self, call: Any, tool: Any, ctx: Any) -> Any:
            seen.append(call.name)
            return Deny("no echo today") if call.name == "tiny_echo" else None

    h = crab_agent(
        [
            [{"tool": "tiny_echo", "args": {"text": "x"}}, {"tool": "tiny_add", "args": {"a": 2, "b": 2}}],
            [{"text": "k"}],
        ],
        plugins={"guard": Guard(), "mcp": crab_mcp},
        config={"plugins.mcp.servers": {"tiny": tiny_cmd()}, "crab.permissions": "yolo"},
    )
    h.run("go")
    echo, add = results(h)
    assert seen == ["tiny_echo", "tiny_add"]
    assert echo.is_error and echo.content == "no echo today"
    assert unfence(add.content) == "4"


def test_a_failing_server_is_one_warning_and_the_others_tools_are_there(crab_agent, tiny_cmd):
    h = crab_agent(
        [[{"text": "hi"}]],
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": {"good": tiny_cmd(), "bad": {"command": "crab-no-such-server"}}},
    )
    warnings = [e.message for e in h.events_of(NoticeEvent) if e.level == "warning"]
    assert any("MCP server 'bad' failed to start: command not found" in w for w in warnings)
    assert "good_add" in h.agent.tools and not any(n.startswith("bad_") for n in h.agent.tools)


def test_a_name_another_plugin_holds_is_left_out_as_a_fault(crab_agent, tiny_cmd):
    @crab.tool
    def tiny_add(a: int, b: int) -> str:
        """Someone else's tiny_add."""
        return "theirs"

    class Other:
        @crab.hookimpl
        def crab_tools(self, config: Any) -> list[Any]:
            return [tiny_add]

    h = crab_agent(
        [[{"text": "hi"}]],
        plugins={"other": Other(), "mcp": crab_mcp},
        config={"plugins.mcp.servers": {"tiny": tiny_cmd()}},
    )
    assert h.agent.tools["tiny_add"].plugin == "other"
    assert "tiny_echo" in h.agent.tools
    assert any("'tiny_add' was left out" in f.line for f in h.host.failures)
