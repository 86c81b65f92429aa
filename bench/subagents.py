"""Subagents benchmark: two ``task`` calls of one reply run at the same time.

Two agents whose scripted model calls wait (``slow``: SLOW s, ``fast``: FAST s), run by
crab-subagents' ``task`` tool through a real agent loop (scripted provider, memory store):

- side by side: both task calls in one reply;
- one after the other: the same two calls in two replies;
- the slower alone: one reply with only the slow agent's call.

It prints the median wall time of each (the delays are sleeps, so wall time is what a user
waits; the CPU time of the whole side-by-side run is printed beside it) and the ratios: side by
side should take about the slower alone (ratio near 1.0), not the sum (near 0.5 of one after the
other).

    python bench/subagents.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import crab
from crab.testing import AgentHarness, ScriptedProvider
from crab_subagents import SubagentsPlugin

SLOW = 0.6
FAST = 0.3
AGENT = re.compile(r"# You are the subagent `([^`]+)`")


class Scripts:
    """The parent's replies in order; each agent's one reply waits its delay, then answers."""

    name = "scripted"

    def __init__(self, parent: list[list[dict[str, Any]]]) -> None:
        self.parent = parent
        self.calls = 0

    def models(self) -> list[crab.ModelInfo]:
        return [crab.ModelInfo(id="scripted", provider=self.name, context_window=1_000_000)]

    def check(self, model: str) -> None:
        return None

    async def stream(self, request: crab.ModelRequest) -> AsyncIterator[crab.events.StreamEvent]:
        found = AGENT.search(request.system)
        if found is None:
            reply = self.parent[min(self.calls, len(self.parent) - 1)]
            self.calls += 1
        else:
            delay = SLOW if found.group(1) == "slow" else FAST
            reply = [{"delay": delay}, {"text": f"{found.group(1)} done"}]
        async for event in ScriptedProvider([reply]).stream(request):
            yield event


def task(call_id: str, agent: str) -> dict[str, Any]:
    return {"tool": "task", "id": call_id, "args": {"description": agent, "prompt": "wait", "agent": agent}}


def write_agents(home: Path) -> None:
    folder = home / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("slow", "fast"):
        (folder / f"{name}.md").write_text(f"---\nname: {name}\ndescription: waits\n---\nWait.\n", encoding="utf-8")


def timed(parent: list[list[dict[str, Any]]], workspace: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one input that runs ``parent``'s replies."""
    harness = AgentHarness(provider=Scripts(parent), plugins={"subagents": SubagentsPlugin()}, workspace=workspace)
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        outcome = harness.run("go")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert outcome.stop == "end", outcome
        errors = [e.content for e in harness.events_of(crab.events.ToolResultEvent) if e.is_error]
        assert not errors, errors
        return wall, cpu
    finally:
        harness.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    done = [{"text": "all done"}]
    shapes = {
        "side by side": [[task("a", "slow"), task("b", "fast")], done],
        "one after the other": [[task("a", "slow")], [task("b", "fast")], done],
        "the slower alone": [[task("a", "slow")], done],
    }
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        os.environ["CRAB_HOME"] = str(home)
        write_agents(home)
        workspace = Path(folder) / "work"
        workspace.mkdir()
        results: dict[str, tuple[float, float]] = {}
        for label, parent in shapes.items():
            samples = [timed(parent, workspace) for _ in range(runs)]
            results[label] = (statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples))
    print(f"two subagents, scripted delays {SLOW:g} s and {FAST:g} s, median of {runs} runs")
    for label, (wall, cpu) in results.items():
        print(f"  {label:<20} {wall:6.3f} s wall  {cpu:6.3f} s CPU")
    side, slower, sequential = (results[k][0] for k in ("side by side", "the slower alone", "one after the other"))
    print(f"side by side / the slower alone:     {side / slower:.2f}  (about 1: they overlap)")
    print(f"side by side / one after the other:  {side / sequential:.2f}  (1 would mean no overlap at all)")


if __name__ == "__main__":
    main()
