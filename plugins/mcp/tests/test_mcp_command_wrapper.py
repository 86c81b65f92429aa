"""A stdio server's command passes through ``crab.processes.wrap_command`` naming the server, so
a command wrapper (crab-sandbox) can run it wrapped, or refuse it, like a tool's command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import crab
import crab_mcp
from crab import processes


def test_a_wrapper_sees_the_server_and_its_argv_is_what_starts(crab_agent, tiny_cmd, tmp_path: Path) -> None:
    seen: list[processes.Launch] = []
    marker = tmp_path / "wrapped-start"

    def wrapper(launch: processes.Launch) -> list[str]:
        seen.append(launch)
        return [*launch.argv, "--marker", str(marker)]  # the tiny server makes the file when it starts

    remove = processes.add_command_wrapper(wrapper)
    try:
        h = crab_agent(
            [],
            plugins={"mcp": crab_mcp},
            config={"plugins.mcp.servers": {"tiny": {**tiny_cmd(), "permission": "read"}}},
        )
        assert "tiny_add" in h.agent.tools
    finally:
        remove()
    assert marker.exists()
    (launch,) = seen
    assert (launch.tool, launch.permission) == ("mcp:tiny", "read")
    assert launch.context.config is h.config
    assert launch.context.workspace == h.workspace and launch.context.call_id == ""


def test_a_wrapper_that_refuses_fails_the_server_with_its_line(crab_agent, tiny_cmd, tmp_path: Path) -> None:
    marker = tmp_path / "started"

    def refuse(launch: processes.Launch) -> Any:
        raise crab.ToolError("refused: [plugins.sandbox] mode is required and the sandbox cannot start: no bwrap")

    remove = processes.add_command_wrapper(refuse)
    try:
        h = crab_agent(
            [],
            plugins={"mcp": crab_mcp},
            config={"plugins.mcp.servers": {"tiny": tiny_cmd("--marker", str(marker))}},
        )
    finally:
        remove()
    assert "tiny_add" not in h.agent.tools and not marker.exists()
    notices = [e.message for e in h.events_of(crab.events.NoticeEvent)]
    assert (
        "MCP server 'tiny' failed to start: refused: [plugins.sandbox] mode is required and the sandbox "
        "cannot start: no bwrap; its tools are missing for this run (`crab mcp list` shows every server and why)"
    ) in notices
