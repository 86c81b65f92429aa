"""The in-memory store: core's built-in ``Store`` (sessions and their image blobs live as long as the
process), so crab runs with no storage plugin; also the contract's reference implementation."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from crab._contracts.errors import StoreError
from crab._contracts.images import sha256_hex
from crab._contracts.storage import ENTRY_TYPES, Entry, EntryType, SearchHit, SessionInfo
from crab._values.entries import new_entry_id, new_session_id, search_hit


class MemoryStore:
    """Keeps sessions in dicts; remembers where the last handoff anchor is for O(1) context reads."""

    name = "memory"

    def __init__(self) -> None:
        self._sessions: dict[str, SessionInfo] = {}
        self._entries: dict[str, list[Entry]] = {}
        self._last_handoff: dict[str, int] = {}
        self._blobs: dict[str, bytes] = {}

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def create_session(
        self, workspace: str, *, title: str | None = None, meta: Mapping[str, Any] | None = None
    ) -> SessionInfo:
        now = time.time()
        info = SessionInfo(id=new_session_id(), workspace=workspace, created=now, title=title, meta=dict(meta or {}))
        while info.id in self._sessions:
            info = replace(info, id=new_session_id())
        self._sessions[info.id] = info
        self._entries[info.id] = []
        return info

    def _require(self, session_id: str) -> list[Entry]:
        try:
            return self._entries[session_id]
        except KeyError:
            raise StoreError(f"no session {session_id!r} in the memory store") from None

    async def get_session(self, session_id: str) -> SessionInfo:
        entries = self._require(session_id)
        info = self._sessions[session_id]
        updated = entries[-1].time if entries else info.created
        return replace(info, updated=updated, entry_count=len(entries))

    async def list_sessions(self, workspace: str | None = None, limit: int = 50) -> list[SessionInfo]:
        infos = [await self.get_session(sid) for sid in self._sessions]
        infos = [i for i in infos if workspace is None or i.workspace == workspace]
        infos.sort(key=lambda i: (i.updated or i.created, i.id), reverse=True)
        return infos[:limit]

    async def append(self, session_id: str, type: EntryType, payload: Mapping[str, Any]) -> Entry:
        if type not in ENTRY_TYPES:
            raise StoreError(f"unknown entry type {type!r}")
        entries = self._require(session_id)
        entry = Entry(
            id=new_entry_id(),
            session_id=session_id,
            parent_id=entries[-1].id if entries else None,
            type=type,
            time=time.time(),
            payload=dict(payload),
        )
        entries.append(entry)
        if type == "anchor" and payload.get("kind") == "handoff":
            self._last_handoff[session_id] = len(entries) - 1
        return entry

    async def put_blob(self, data: bytes) -> str:
        digest = sha256_hex(data)
        self._blobs.setdefault(digest, bytes(data))
        return digest

    async def get_blob(self, sha256: str) -> bytes | None:
        return self._blobs.get(sha256)

    async def entries(self, session_id: str, *, since_handoff: bool = False) -> list[Entry]:
        entries = self._require(session_id)
        start = self._last_handoff.get(session_id, 0) if since_handoff else 0
        return entries[start:]

    async def search(
        self, query: str, *, session_id: str | None = None, workspace: str | None = None, limit: int = 20
    ) -> list[SearchHit]:
        words = [w.lower() for w in query.split() if w]
        hits: list[SearchHit] = []
        for sid, entries in self._entries.items():
            if session_id is not None and sid != session_id:
                continue
            if workspace is not None and self._sessions[sid].workspace != workspace:
                continue
            for entry in entries:
                hit = search_hit(entry, words) if words else None
                if hit is not None:
                    hits.append(hit)
        hits.sort(key=lambda h: h.time, reverse=True)
        return hits[:limit]

    async def fork(self, session_id: str, at_entry: str | None = None) -> SessionInfo:
        source = self._require(session_id)
        if at_entry is None:
            cut = len(source)
        else:
            index = next((i for i, e in enumerate(source) if e.id == at_entry), None)
            if index is None:
                raise StoreError(f"no entry {at_entry!r} in session {session_id}")
            cut = index + 1
        origin = self._sessions[session_id]
        info = await self.create_session(origin.workspace, title=origin.title, meta=origin.meta)
        info = replace(info, forked_from=session_id, fork_entry=source[cut - 1].id if cut else None)
        self._sessions[info.id] = info
        copied = [replace(e, session_id=info.id) for e in source[:cut]]
        self._entries[info.id] = copied
        handoffs = [i for i, e in enumerate(copied) if e.type == "anchor" and e.payload.get("kind") == "handoff"]
        if handoffs:
            self._last_handoff[info.id] = handoffs[-1]
        return info
