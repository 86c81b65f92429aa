"""New session and entry ids, the interchange form of sessions and entries (``session_header``,
``entry_to_dict`` and their inverses), the blobs an entry names, and an entry's searchable text."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any

from crab._contracts.storage import ENTRY_TYPES, INTERCHANGE_VERSION, SESSION_HEADER_KEY, Entry, SearchHit, SessionInfo


def new_session_id() -> str:
    """A session id that sorts by creation time: ``20261130T142501-3fa9c1``."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def new_entry_id() -> str:
    """A random entry id, unique within its session."""
    return secrets.token_hex(6)


def blob_hashes(payload: Mapping[str, Any]) -> list[str]:
    """The sha256 of every image a message or tool-result payload names (empty for others)."""
    found: list[str] = []
    for item in payload.get("images") or ():
        if isinstance(item, Mapping) and isinstance(item.get("sha256"), str):
            found.append(item["sha256"])
    kept = payload.get("compaction")
    if isinstance(kept, Mapping):
        for message in kept.get("kept") or ():
            if isinstance(message, Mapping):
                found.extend(blob_hashes(message))
    return found


def valid_blob_hash(sha256: str) -> bool:
    """Whether ``sha256`` is 64 lower-case hex digits (what a store may use as a file name)."""
    return len(sha256) == 64 and all(c in "0123456789abcdef" for c in sha256)


def session_header(info: SessionInfo) -> dict[str, Any]:
    """A session header as the JSON object that starts a tape and an exported session."""
    return {
        SESSION_HEADER_KEY: INTERCHANGE_VERSION,
        "id": info.id,
        "workspace": info.workspace,
        "created": info.created,
        "title": info.title,
        "forked_from": info.forked_from,
        "fork_entry": info.fork_entry,
        "meta": dict(info.meta),
    }


def session_from_header(data: Mapping[str, Any]) -> SessionInfo:
    """Inverse of ``session_header``; raises ``ValueError`` (or Key/TypeError) when malformed or too new."""
    version = data[SESSION_HEADER_KEY]
    if not isinstance(version, int) or version > INTERCHANGE_VERSION:
        raise ValueError(f"session format v{version} is newer than this crab understands (v{INTERCHANGE_VERSION})")
    return SessionInfo(
        id=str(data["id"]),
        workspace=str(data["workspace"]),
        created=float(data["created"]),
        title=data.get("title"),
        forked_from=data.get("forked_from"),
        fork_entry=data.get("fork_entry"),
        meta=dict(data.get("meta") or {}),
    )


def entry_to_dict(entry: Entry) -> dict[str, Any]:
    """One entry as a line of the interchange format (the session id is the header's)."""
    return {
        "id": entry.id,
        "parent_id": entry.parent_id,
        "type": entry.type,
        "time": entry.time,
        "payload": dict(entry.payload),
    }


def entry_from_dict(data: Any, session_id: str) -> Entry | None:
    """Inverse of ``entry_to_dict``; None when ``data`` is not a valid entry."""
    try:
        if (
            not isinstance(data, Mapping)
            or data.get("type") not in ENTRY_TYPES
            or not isinstance(data["payload"], dict)
        ):
            return None
        parent = data.get("parent_id")
        return Entry(
            id=str(data["id"]),
            session_id=session_id,
            parent_id=None if parent is None else str(parent),
            type=data["type"],
            time=float(data["time"]),
            payload=data["payload"],
        )
    except (ValueError, KeyError, TypeError):
        return None


def entry_text(entry: Entry) -> str:
    """The searchable text of an entry: message content, tool output, anchor name and state."""
    payload = entry.payload
    parts: list[str] = []
    for key in ("content", "name", "text", "error"):
        value = payload.get(key)
        if isinstance(value, str):
            parts.append(value)
    for call in payload.get("tool_calls", ()) or ():
        if isinstance(call, Mapping):
            parts.append(str(call.get("name", "")))
            parts.append(str(call.get("arguments", "")))
    state = payload.get("state")
    if isinstance(state, Mapping):
        parts.extend(str(v) for v in state.values())
    return "\n".join(p for p in parts if p)


def search_hit(entry: Entry, words: list[str]) -> SearchHit | None:
    """A ``SearchHit`` when ``entry_text(entry)`` holds every one of the lower-case ``words``, else None.

    The excerpt runs from 60 characters before the first word to 100 after its start, on one line.
    """
    text = entry_text(entry)
    lowered = text.lower()
    if not all(w in lowered for w in words):
        return None
    at = lowered.find(words[0])
    excerpt = text[max(0, at - 60) : at + 100].replace("\n", " ")
    return SearchHit(entry.session_id, entry.id, entry.type, excerpt, entry.time)
