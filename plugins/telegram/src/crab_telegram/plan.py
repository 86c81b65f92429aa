"""The model's plan (``crab.events.PlanEvent``, crab-todo's checklist) in a chat: one message edited in
place as the plan changes, at most once per ``edit_interval`` (Telegram's edit limits, as for a
streamed answer), and a new message for each message the user sends."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import crab

if TYPE_CHECKING:
    from crab_telegram.channel import TelegramChannel

MARKS = {"done": "✅", "in_progress": "▶️", "pending": "⬜"}
STEP_CHARS = 200
"""Characters of one step shown (its first line); the checklist is a glance, not the plan itself."""
MAX_STEPS = 50
"""Steps shown; the rest are counted in one line (the message must stay under Telegram's limit)."""


def plan_text(items: tuple[crab.events.PlanItem, ...]) -> str:
    """The checklist as one plain-text message: a head line, then a mark and each step, as many
    as fit in one Telegram message (50 steps of 200 characters would be 10,000)."""
    from crab_telegram.format import LIMIT, units

    if not items:
        return "Plan cleared."
    done = sum(item.status == "done" for item in items)
    lines = [f"Plan ({done}/{len(items)} done):"]
    room = LIMIT - units(lines[0]) - len(f"\n… and {len(items)} more steps")
    for item in items[:MAX_STEPS]:
        text = item.text.strip().splitlines()[0] if item.text.strip() else "(empty step)"
        if len(text) > STEP_CHARS:
            text = text[: STEP_CHARS - 1] + "…"
        line = f"{MARKS.get(item.status, MARKS['pending'])} {text}"
        room -= units(line) + 1
        if room < 0:
            break
        lines.append(line)
    if len(items) > len(lines) - 1:
        lines.append(f"… and {len(items) - (len(lines) - 1)} more steps")
    return "\n".join(lines)


class PlanView:
    """The plan of one turn's chat: ``on_event`` takes each ``PlanEvent``, ``run`` sends the
    first at once and edits that message with the latest plan no more often than ``interval``;
    ``close`` shows the last plan before the turn's answer goes out."""

    def __init__(self, channel: TelegramChannel, address: str, interval: float) -> None:
        self.channel = channel
        self.address = address
        self.interval = interval
        self.text = ""
        self.shown = ""
        self.message_id: int | None = None
        self.last: float | None = None
        self.changed = asyncio.Event()
        self.closing = False

    def on_event(self, event: crab.events.Event) -> None:
        # A child session's plan arrives wrapped in a ChildEvent: the chat shows only its own.
        if isinstance(event, crab.events.PlanEvent):
            self.text = plan_text(event.items)
            self.changed.set()

    async def run(self) -> None:
        from crab_telegram.api import TelegramError

        while True:
            if not self.closing:
                await self.changed.wait()
            self.changed.clear()
            if self.last is not None:
                wait = self.last + self.interval - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)  # the plans that come meanwhile: only the latest is shown
            if self.text and self.text != self.shown:
                text = self.text
                try:
                    self.message_id = await self.channel._put(self.address, text, None, self.message_id)
                except TelegramError:
                    return  # a plan that cannot be shown must not hold up the answer
                self.shown = text
                self.last = time.monotonic()
            if self.closing and self.text == self.shown:
                return

    async def close(self, task: asyncio.Task[None]) -> None:
        """Show the last plan (after the rest of the current interval) and stop."""
        self.closing = True
        self.changed.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), self.interval + 30)
        except (TimeoutError, Exception):
            task.cancel()
