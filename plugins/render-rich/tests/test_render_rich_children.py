"""Child sessions (subagents) on the rich renderer: one live line each, nothing in the answer."""

from __future__ import annotations

import io
from itertools import count

import crab
from crab_render_rich.renderer import Preferences, RichRenderer
from crab_render_rich.screen import TerminalScreen
from rich.console import Console

WIDTH = 100


def child(session: str, label: str, call: str, event: crab.events.Event) -> crab.events.ChildEvent:
    return crab.events.ChildEvent(session, label, call, event)


def make() -> tuple[RichRenderer, Console]:
    file = io.StringIO()
    term = Console(file=file, width=WIDTH, force_terminal=True, color_system=None, record=True)
    target = crab.rendering.RenderTarget(file, file, color=False, model="m", context_window=None)
    ticks = count(0, 1)
    renderer = RichRenderer(target, TerminalScreen(term, live_area=False), Preferences(), lambda: next(ticks))
    return renderer, term


def live_text(renderer: RichRenderer) -> str:
    term = Console(file=io.StringIO(), width=WIDTH, force_terminal=True, color_system=None, record=True)
    term.print(renderer.area)
    return term.export_text()


def test_each_running_child_has_one_live_line_and_its_text_stays_out_of_the_answer() -> None:
    renderer, term = make()
    renderer.handle(crab.events.TurnStarted("p", "t", "go"))
    for n, call in ((1, "c1"), (2, "c2")):
        renderer.handle(
            crab.events.ToolCallEvent(crab.messages.ToolCall(call, "task", {"description": f"part {n}", "prompt": "…"}))
        )
    renderer.handle(crab.events.UsageEvent(crab.messages.Usage(10, 5)))
    renderer.handle(child("k1", "explore", "c1", crab.events.TurnStarted("k1", "x", "find")))
    renderer.handle(child("k2", "general", "c2", crab.events.TurnStarted("k2", "y", "fix")))
    renderer.handle(
        child("k1", "explore", "c1", crab.events.ToolCallEvent(crab.messages.ToolCall("r1", "read", {"path": "a.py"})))
    )
    renderer.handle(
        child("k1", "explore", "c1", crab.events.ToolCallEvent(crab.messages.ToolCall("r2", "grep", {"pattern": "x"})))
    )
    renderer.handle(child("k2", "general", "c2", crab.events.TextDelta("SECRET CHILD PROSE")))
    grandchild = child("g1", "tiny", "r9", crab.events.ToolCallEvent(crab.messages.ToolCall("q", "ls", {"path": "."})))
    renderer.handle(child("k2", "general", "c2", grandchild))

    shown = live_text(renderer)
    lines = [line for line in shown.splitlines() if "tool" in line and "·" in line]
    assert len(lines) == 3, shown
    assert any("explore · grep" in line and "2 tools" in line for line in lines), shown
    assert any(line.strip().split(" ", 1)[1].startswith("general · writing") for line in lines), shown
    assert any("general › tiny · ls" in line for line in lines), shown

    renderer.handle(child("k1", "explore", "c1", crab.events.TurnEnded("k1", "x", "end", "found")))
    assert "explore" not in live_text(renderer)
    renderer.handle(crab.events.ToolResultEvent("c1", "task", "found\n\n[task: agent explore]", False, 10))
    renderer.handle(crab.events.TurnEnded("p", "t", "end", "ok", crab.messages.Usage(1, 1)))
    assert not renderer.children
    renderer.close()
    assert "SECRET CHILD PROSE" not in term.export_text()
