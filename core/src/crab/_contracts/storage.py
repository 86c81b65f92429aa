"""The storage contract: sessions, typed append-only entries, anchors, fork and search; every store
plugin implements ``Store``, and ``crab.testing.StoreContract`` checks one."""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from crab._contracts.messages import Usage

EntryType = Literal["message", "tool_result", "anchor", "event", "custom"]
"""``message``: a user or assistant message (payload = ``message_to_dict``; an assistant message
carries its tool calls). ``tool_result``: one call's result (``message_to_dict`` of a
``ToolResultMessage``), paired with its call by ``call_id``. ``anchor``: a named point with state,
``{"name": ..., "kind": "handoff" | "mark", "state": {...}}``; the model's context starts afresh
after the last ``handoff``. ``event``: loop events worth keeping (model calls with usage, errors,
system prompts) and ``custom``: plugin data, ``{"plugin": name, ...}``; neither is ever part of the
model's context. Images in messages are references by sha256: a ``BlobStore`` keeps their bytes
once, beside the sessions (a store without it gets them inlined as base64)."""
ENTRY_TYPES: tuple[EntryType, ...] = ("message", "tool_result", "anchor", "event", "custom")


def new_session_id() -> str:
    """A session id that sorts by creation time: ``20261130T142501-3fa9c1``."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def new_entry_id() -> str:
    """A random entry id, unique within its session."""
    return secrets.token_hex(6)


@dataclass(frozen=True, slots=True)
class Entry:
    """One record of a session. ``parent_id`` is the entry before it (``None`` for the first)."""

    id: str
    session_id: str
    parent_id: str | None
    type: EntryType
    time: float
    payload: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session's header, plus what a store can tell cheaply about it.

    ``forked_from`` and ``fork_entry`` name the session and entry a fork started from.
    ``usage`` is the sum of the session's model calls where the store keeps totals.
    """

    id: str
    workspace: str
    created: float
    title: str | None = None
    forked_from: str | None = None
    fork_entry: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    updated: float | None = None
    entry_count: int | None = None
    usage: Usage | None = None


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result: where it is and a short excerpt around the match."""

    session_id: str
    entry_id: str
    type: EntryType
    excerpt: str
    time: float


@runtime_checkable
class Store(Protocol):
    """Session storage. All methods are async; ``open`` is awaited before any other call.

    Guarantees every store gives (checked by ``crab.testing.StoreContract``):

    - ``append`` is durable when it returns: a killed process loses at most what it had not
      appended yet.
    - ``entries`` returns entries in append order; each entry's ``parent_id`` is the id of the one
      before it in that order.
    - ``entries(since_handoff=True)`` starts at the last ``handoff`` anchor (inclusive), and its
      cost does not grow with the entries before that anchor.
    - a fork's ``entries`` are the source's entries up to and including the fork entry (same ids
      and payloads) followed by its own.
    - unknown session ids raise ``crab._contracts.errors.StoreError``.

    Optional attribute: ``by_name_only = True`` keeps a store from being picked when no store is
    configured (it is used only as ``[crab] store`` or ``--store``): for stores that need setup,
    such as a database server.
    """

    name: str

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def create_session(
        self, workspace: str, *, title: str | None = None, meta: Mapping[str, Any] | None = None
    ) -> SessionInfo: ...

    async def get_session(self, session_id: str) -> SessionInfo: ...

    async def list_sessions(self, workspace: str | None = None, limit: int = 50) -> list[SessionInfo]:
        """Sessions, most recently updated first; all workspaces when ``workspace`` is None."""
        ...

    async def append(self, session_id: str, type: EntryType, payload: Mapping[str, Any]) -> Entry: ...

    async def entries(self, session_id: str, *, since_handoff: bool = False) -> list[Entry]: ...

    async def search(
        self, query: str, *, session_id: str | None = None, workspace: str | None = None, limit: int = 20
    ) -> list[SearchHit]:
        """Entries whose text matches all words of ``query``, newest first."""
        ...

    async def fork(self, session_id: str, at_entry: str | None = None) -> SessionInfo:
        """A new session starting from ``at_entry`` of ``session_id`` (its last entry when None)."""
        ...


@runtime_checkable
class SessionImporter(Protocol):
    """An optional capability of a ``Store``: write a whole session exactly as given.

    ``crab sessions migrate`` uses it when the target store has it (``isinstance(store,
    SessionImporter)``), keeping ids, parent chains, times and fork origins; a store without it
    gets new sessions appended entry by entry. The method may be sync or ``async``. It raises
    ``StoreError`` when a session with that id already exists.
    """

    def import_session(self, info: SessionInfo, entries: Iterable[Entry]) -> SessionInfo | Awaitable[SessionInfo]: ...


@runtime_checkable
class BlobStore(Protocol):
    """An optional capability of a ``Store``: bytes (images) kept once by their sha256.

    Every store plugin of crab has it (``crab.testing.StoreContract`` checks it when present).
    Blobs belong to the store, not to one session: a fork, or a second message with the same
    image, names the same blob and adds no bytes. ``put_blob`` is idempotent and durable when it
    returns; ``get_blob`` gives None for a hash the store does not hold.
    """

    async def put_blob(self, data: bytes) -> str:
        """Keep ``data`` (once); return its sha256 as lower-case hex."""
        ...

    async def get_blob(self, sha256: str) -> bytes | None: ...


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


SESSION_HEADER_KEY = "crab_session"
"""Marks a session header object; its value is the interchange format's version."""
INTERCHANGE_VERSION = 1


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
