"""What a tool changed reaches renderers as ``FileDiff``s on its ``ToolResultEvent``, and a plan
is a ``PlanEvent`` whose JSON-lines form lists the whole checklist (crab._contracts.events)."""

from __future__ import annotations

import asyncio
import types
from pathlib import Path

import crab
from crab._contracts.events import FileDiff, PlanEvent, PlanItem, ToolResultEvent
from crab._values.event_json import event_to_dict


def test_a_tools_diffs_travel_to_its_result_event(crab_agent):
    diff = FileDiff("notes.txt", "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-old\n+new\n", "old\n", "new\n", 1, 1)

    @crab.tool(permission="read")
    def change() -> crab.ToolResult:
        """Pretend to change a file."""
        return crab.ToolResult("changed notes.txt", diffs=(diff,))

    plugin = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [change]))
    h = crab_agent([[{"tool": "change", "args": {}}], [{"text": "done"}]], plugins={"p": plugin})
    h.run("go")
    (result,) = h.events_of(ToolResultEvent)
    assert result.diffs == (diff,)
    shown = event_to_dict(result)["diffs"]
    assert shown == [
        {"path": "notes.txt", "unified": diff.unified, "before": "old\n", "after": "new\n", "added": 1, "removed": 1}
    ]


def test_a_cut_result_keeps_its_diffs():
    diff = FileDiff("big.txt", "@@ -1 +1 @@\n-a\n+b\n")

    @crab.tool(output_limit=crab.tools.OutputLimit(lines=2))
    def noisy() -> crab.ToolResult:
        """Lots of output."""
        return crab.ToolResult("\n".join(map(str, range(50))), diffs=(diff,))

    limited = asyncio.run(crab.tools.run_tool(noisy, {}, crab.ToolContext("s", Path("."))))
    assert limited.diffs == (diff,) and limited.content != "\n".join(map(str, range(50)))


def test_a_result_without_diffs_has_no_diffs_key():
    assert "diffs" not in event_to_dict(ToolResultEvent("c", "read", "text"))


def test_a_plan_event_lists_every_item_with_its_status():
    event = PlanEvent("s1", (PlanItem("read the code", "done"), PlanItem("fix it", "in_progress"), PlanItem("test")))
    assert event_to_dict(event) == {
        "v": 1,
        "type": "plan",
        "session_id": "s1",
        "items": [
            {"text": "read the code", "status": "done"},
            {"text": "fix it", "status": "in_progress"},
            {"text": "test", "status": "pending"},
        ],
    }
