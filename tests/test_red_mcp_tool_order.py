"""Red team (issue 38's invariant across processes): the tools array must be the same bytes from
one process to the next when the set of tools is the same. An MCP server that is slower than
``startup_wait`` in one process (a first ``npx`` download, a loaded machine) joins the registry
late, after the others; in the next process it is ready in time and its tools come first, in the
configured order. Same tools, another order: every provider cache misses on the continued session.

Found by reading ``crab_mcp.lifecycle`` (late tools join through ``AgentHandle.add_tools``, which
appends) beside ``PluginHost.add_tools`` (insertion order is request order). The fix belongs to
core (a canonical order of the request's tools, ``crab/_loop``), which issue 40 is rewriting: this
test is ``xfail(strict)`` until then."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

crab_mcp = pytest.importorskip("crab_mcp")
pytestmark = pytest.mark.slow
TINY = Path(__file__).resolve().parents[1] / "plugins" / "mcp" / "tests" / "mcp_tiny_server.py"


def servers(slow_first: bool) -> dict[str, Any]:
    first = [str(TINY), *(["--sleep", "4"] if slow_first else [])]
    return {
        "alpha": {"command": sys.executable, "args": first, "connect_timeout": 120},
        "beta": {"command": sys.executable, "args": [str(TINY)], "connect_timeout": 120},
    }


@pytest.mark.xfail(
    strict=True,
    reason="the request's tools follow registry insertion order: an MCP server that joined late in "
    "one process is ordered differently in the next (core/_loop, issue 40)",
)
def test_a_server_late_in_one_process_keeps_the_tools_order_of_the_next(crab_agent: Any) -> None:
    replies = [[{"text": "first"}], [{"text": "second"}], [{"text": "third"}]]
    slow = crab_agent(
        replies,
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": servers(slow_first=True), "plugins.mcp.startup_wait": 0.5},
    )
    slow.run("one")
    for _ in range(2400):  # alpha joins in the background once its 4 s sleep is over
        if any(name.startswith("alpha_") for name in slow.agent.tools):
            break
        slow.run_async(asyncio.sleep(0.05))
    assert any(name.startswith("alpha_") for name in slow.agent.tools)
    slow.run("two")
    before = slow.requests[-1]

    # The next process: the same configuration, alpha ready in time; the same session continued.
    fresh = crab_agent(
        replies[2:],
        plugins={"mcp": crab_mcp},
        config={"plugins.mcp.servers": servers(slow_first=False), "plugins.mcp.startup_wait": 300},
        store=slow.store,
    )
    fresh.session = fresh.run_async(fresh.agent.resume(slow.session.id))
    fresh.run("three")
    after = fresh.requests[-1]

    assert {t.name for t in after.tools} == {t.name for t in before.tools}  # the same set of tools
    assert [t.name for t in after.tools] == [t.name for t in before.tools], "same tools, another order"
