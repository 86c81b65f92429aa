"""The model's plan (``crab.events.PlanEvent``) as a compact checklist: in the live area while a turn runs
(redrawn in place as the plan changes), printed once into the scrollback when the turn ends if it
changed during it. A long plan folds: the done steps into one line, the pending tail into "… N more"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crab_render_rich.view import one_line

if TYPE_CHECKING:
    from crab.events import PlanItem
    from rich.text import Text

MAX_LINES = 7
"""Lines the checklist takes at most below its head line (the live area also holds the answer)."""
MARKS = {"done": ("✓", "dim"), "in_progress": ("▸", "bold cyan"), "pending": ("○", "")}


@dataclass
class Checklist:
    """The plan as last emitted, and whether it changed since it was last printed."""

    items: tuple[PlanItem, ...] = ()
    changed: bool = False

    def update(self, items: tuple[PlanItem, ...]) -> None:
        self.changed = self.changed or items != self.items
        self.items = items

    def printed(self) -> None:
        self.changed = False

    def lines(self, width: int = 100, limit: int = MAX_LINES) -> list[tuple[str, str]]:
        """(text, style) per line: ``plan 1/3`` and the steps, folded to ``limit`` lines."""
        return checklist_lines(self.items, width, limit)

    def text(self, width: int = 100, limit: int = MAX_LINES) -> Text:
        from rich.text import Text

        shown = Text()
        for number, (line, style) in enumerate(self.lines(width, limit)):
            if number:
                shown.append("\n")
            shown.append(line, style=style)
        return shown


def checklist_lines(items: Sequence[PlanItem], width: int = 100, limit: int = MAX_LINES) -> list[tuple[str, str]]:
    """See ``Checklist.lines``; an empty plan is one line saying it was cleared."""
    if not items:
        return [("plan cleared", "dim")]
    done = sum(item.status == "done" for item in items)
    head = (f"plan {done}/{len(items)}", "bold")
    steps = list(items)
    folded: list[tuple[str, str]] = []
    if len(steps) > limit:
        finished = [item for item in steps if item.status == "done"]
        if len(finished) > 1:
            folded.append((f"  ✓ {len(finished)} done", "dim"))
            steps = [item for item in steps if item.status != "done"]
    room = max(1, limit - len(folded))
    more = len(steps) - room if len(steps) > room else 0
    if more:
        room -= 1
        more += 1
    for item in steps[:room]:
        mark, style = MARKS.get(item.status, MARKS["pending"])
        folded.append((f"  {mark} {one_line(item.text, max(8, width - 5))}", style))
    if more:
        folded.append((f"  … {more} more", "dim"))
    return [head, *folded]
