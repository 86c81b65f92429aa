"""Child sessions (a ``task`` tool's subagents) shown compactly: one live line per running child.

A child's events arrive wrapped in ``crab.events.ChildEvent`` (a grandchild's wrapped twice); none of
its text is printed into the parent's answer. ``ChildLines`` keeps, per child session, what it
is doing now (the tool it runs, thinking, writing), how many tools it called and since when, and
forgets the child when its turn ends (the parent's tool line then shows the result).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from crab.events import ChildEvent, Event, TextDelta, ThinkingDelta, ToolCallEvent, ToolResultEvent, TurnEnded

from crab_render_rich import view

if TYPE_CHECKING:
    from rich.text import Text

MAX_LINES = 8
"""Children shown at once; more are counted on one last line."""


@dataclass
class Child:
    """One running child: its label path (``general › explore`` for a grandchild) and activity."""

    label: str
    started: float
    doing: str = "starting"
    tools: int = 0
    seen: set[str] = field(default_factory=set)


def innermost(event: ChildEvent) -> tuple[str, str, Event]:
    """The session id of the child that emitted ``event``, its label path, and its own event."""
    labels = [event.label]
    while isinstance(event.event, ChildEvent):
        event = event.event
        labels.append(event.label)
    return event.session_id, " › ".join(labels), event.event


class ChildLines:
    """The running children of the turn on screen, in the order they started."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.children: dict[str, Child] = {}

    def __bool__(self) -> bool:
        return bool(self.children)

    def handle(self, event: ChildEvent) -> None:
        session_id, label, inner = innermost(event)
        if isinstance(inner, TurnEnded):
            self.children.pop(session_id, None)
            return
        child = self.children.get(session_id)
        if child is None:
            child = self.children[session_id] = Child(label, self.clock())
        if isinstance(inner, ToolCallEvent):
            if inner.call.id not in child.seen:
                child.seen.add(inner.call.id)
                child.tools += 1
            args = view.key_args(inner.call.arguments)
            child.doing = f"{inner.call.name} {args}".strip()
        elif isinstance(inner, ToolResultEvent | ThinkingDelta):
            child.doing = "thinking"
        elif isinstance(inner, TextDelta):
            child.doing = "writing"

    def clear(self) -> None:
        self.children.clear()

    def lines(self, now: float, frame: str) -> Iterator[Text]:
        from rich.text import Text

        shown = list(self.children.values())
        for child in shown[:MAX_LINES]:
            line = Text(f"  {frame} ", style="cyan")
            line.append(view.one_line(child.label, 40), style="bold")
            tools = f"{child.tools} tool{'s' if child.tools != 1 else ''}"
            line.append(f" · {view.one_line(child.doing, 60)} · {tools} · {view.seconds(now - child.started)}", "dim")
            yield line
        if len(shown) > MAX_LINES:
            yield Text(f"  … {len(shown) - MAX_LINES} more subagents running", style="dim")
