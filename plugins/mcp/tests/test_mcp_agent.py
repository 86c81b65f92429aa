"""MCP tools inside a real agent: the same registry, the permission gate, interceptors, turns."""

from __future__ import annotations

from typing import Any

import crab
import crab_mcp
from crab.events import NoticeEvent
from crab.hooks import Deny
from crab.messages import ToolResultMessage


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


def test_a_slow_server_joins_later_and_a_hung_one_never_holds_up_start_up(crab_home, tiny_cmd, tmp_path, unfence):
    # startup_wait = 1: the agent starts without waiting for "late" (it boots in 3 s) or "hang"
    # (it never answers initialize, connect_timeout 60); late's tools join once it is ready, with
    # one notice, and the hung one is ended at once when the agent closes (issue 39, item 4).
    import asyncio
    import time
    from pathlib import Path

    from crab.testing import AgentHarness

    eof = tmp_path / "hang-saw-eof"
    h = AgentHarness(
        [[{"tool": "late_add", "args": {"a": 20, "b": 22}}], [{"text": "done"}]],
        plugins={"mcp": crab_mcp},
        config={
            "plugins.mcp.servers": {
                "late": {**tiny_cmd("--sleep", "3"), "connect_timeout": 60},
                "hang": {**tiny_cmd("--mute", "--on-eof", str(eof)), "connect_timeout": 60},
            },
            "plugins.mcp.startup_wait": 1,
            "crab.permissions": "yolo",
        },
        workspace=Path.cwd(),
    )
    assert "late_add" not in h.agent.tools  # it sleeps 3 s before serving: start-up went on after 1 s

    def joined() -> list[str]:
        return [e.message for e in h.events_of(NoticeEvent) if "MCP server 'late' was ready" in e.message]

    deadline = time.monotonic() + 90
    while not joined() and time.monotonic() < deadline:
        h.run_async(asyncio.sleep(0.1))
    (notice,) = joined()
    assert "tool(s) joined" in notice and "start-up wait" in notice
    assert "late_add" in h.agent.tools
    h.run("add")
    (added,) = results(h)
    assert unfence(added.content) == "42"
    assert "hang_add" not in h.agent.tools
    h.close()
    assert not eof.exists()  # a server that never answered is ended at once, not waited for
    warnings = [e.message for e in h.events_of(NoticeEvent) if e.level == "warning"]
    assert not any("'hang'" in w for w in warnings), warnings  # stopping it is no failure to report
