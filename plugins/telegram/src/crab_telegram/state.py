"""The channel's durable state under ``$CRAB_HOME/telegram/``: the next update offset and the
updates taken but not yet answered, so a restart neither loses nor repeats one.

One JSON file per bot (named by the bot's numeric id, the part of the token before ``:``, which is
public), written atomically. An update is added (``take``) before the offset that confirms it
to Telegram moves past it, and removed (``done``) once it is answered; at start, the updates
still pending are handled first.

Telegram keeps an unconfirmed update for 24 hours, and after a week without updates it numbers
the next one at random, perhaps below the offset held here: asking with that offset would
confirm (drop) it unread, and every later one, for good. So when no update came for
``STALE_AFTER`` seconds (``seen_at``), the offset is forgotten and the next poll asks for all
that is unconfirmed: by then nothing taken before can still be waiting to come again.

A pending update whose turn has begun carries ``started`` (the session and how many messages it
held then, and the text handed to it): after a crash mid-turn, the restart finds that message
already recorded in the session and does not record or run it again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import crab

VERSION = 1
STALE_AFTER = 2 * 24 * 3600.0
"""Seconds without an update after which the offset is forgotten (Telegram keeps updates 24 h)."""


def state_path(bot_id: str) -> Path:
    safe = bot_id if bot_id.isdigit() else "bot"
    return crab.config.crab_home() / "telegram" / f"state-{safe}.json"


class UpdateState:
    """``offset`` (the next ``update_id`` to ask for) and ``pending`` updates, by id."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        self.offset = 0
        self.seen_at = clock()
        """When the last update arrived (wall clock: it must survive restarts)."""
        self.pending: dict[int, dict[str, Any]] = {}
        self.load()

    def poll_offset(self) -> int | None:
        """The offset for the next ``getUpdates``: None (all unconfirmed) once it went stale."""
        if self.offset and self.clock() - self.seen_at > STALE_AFTER:
            self.offset = 0
        return self.offset or None

    def load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # no state yet (or unreadable): start from what Telegram still holds
        if not isinstance(data, Mapping) or data.get("version") != VERSION:
            return
        offset = data.get("offset")
        if isinstance(offset, int) and not isinstance(offset, bool):
            self.offset = offset
        seen_at = data.get("seen_at")
        if isinstance(seen_at, int | float) and not isinstance(seen_at, bool):
            self.seen_at = float(seen_at)
        for update in data.get("pending") or []:
            if isinstance(update, Mapping) and isinstance(update.get("update_id"), int):
                self.pending[int(update["update_id"])] = dict(update)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        pending = [self.pending[k] for k in sorted(self.pending)]
        data = {"version": VERSION, "offset": self.offset, "seen_at": self.seen_at, "pending": pending}
        crab.tools.write_atomic(self.path, json.dumps(data, ensure_ascii=False).encode("utf-8"))

    def take(self, updates: list[dict[str, Any]], through: int | None = None) -> list[dict[str, Any]]:
        """Record ``updates`` as pending and move the offset past them (and past ``through``, the
        last id of a batch, whose skipped updates are not recorded); returns the new ones."""
        fresh = []
        start = self.offset
        if updates or through is not None:
            self.seen_at = self.clock()
        if through is not None and through >= self.offset:
            self.offset = through + 1
        for update in updates:
            update_id = update.get("update_id")
            if not isinstance(update_id, int) or update_id in self.pending or update_id < start:
                continue  # already taken: Telegram sent it again
            self.offset = max(self.offset, update_id + 1)
            self.pending[update_id] = update
            fresh.append(update)
        if updates or through is not None:
            self.save()
        return fresh

    def done(self, update_id: int) -> None:
        if self.pending.pop(update_id, None) is not None:
            self.save()

    def replace(self, update_id: int, update: dict[str, Any]) -> None:
        """A pending update's content replaced (an edit that arrived before its turn began)."""
        if update_id in self.pending:
            self.pending[update_id] = {**update, "update_id": update_id}
            self.save()

    def start(self, update_id: int, session_id: str, at: int, text: str) -> None:
        """Record that ``update_id``'s turn begins: ``text`` goes to ``session_id``, which holds
        ``at`` messages now. Saved before the turn records anything."""
        if update_id in self.pending:
            self.pending[update_id]["started"] = {"session": session_id, "at": at, "text": text}
            self.save()

    def started(self, update_id: int) -> tuple[str, int, str] | None:
        """(session id, message count, text) of a turn that began before a restart, or None."""
        marker = (self.pending.get(update_id) or {}).get("started")
        if not isinstance(marker, Mapping):
            return None
        session, at, text = marker.get("session"), marker.get("at"), marker.get("text")
        if isinstance(session, str) and isinstance(at, int) and isinstance(text, str):
            return session, at, text
        return None
