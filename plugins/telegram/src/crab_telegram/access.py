"""Who may use the bot: ``allow_from`` lists numeric user and chat ids; empty means nobody,
``"*"`` anyone (an explicit opt-in). Everything else is a stranger: no reply, one log line."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

ANYONE = "*"
_HANDLE = re.compile(r"[A-Za-z0-9_]{1,32}")


def bad_entries(allow_from: Iterable[str]) -> list[str]:
    """Entries that are neither ``"*"`` nor a (possibly negative) integer id."""
    return [e for e in allow_from if e != ANYONE and not e.lstrip("-").isdigit()]


def allowed(allow_from: Iterable[str], user_id: Any, chat_id: Any) -> bool:
    """Whether a message from ``user_id`` in ``chat_id`` may reach the agent."""
    entries = set(allow_from)
    if ANYONE in entries:
        return True
    ids = {str(v) for v in (user_id, chat_id) if isinstance(v, int) and not isinstance(v, bool)}
    return bool(ids & entries)


def describe_sender(user_id: Any, username: str | None, chat_id: Any) -> str:
    """``user 42 (@name) in chat -100`` for the log line about a stranger (ids and handle only)."""
    handle = f" (@{username})" if isinstance(username, str) and _HANDLE.fullmatch(username) else ""
    return f"user {user_id}{handle} in chat {chat_id}"
