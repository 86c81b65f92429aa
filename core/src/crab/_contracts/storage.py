"""The storage contract: sessions, typed append-only entries, anchors, fork and search; every store
plugin implements ``Store``, and ``crab.testing.StoreContract`` checks one."""

from __future__ import annotations

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


SESSION_HEADER_KEY = "crab_session"
"""Marks a session header object; its value is the interchange format's version."""
INTERCHANGE_VERSION = 1
