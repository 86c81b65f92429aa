"""A persistent store for crab-acp's end-to-end tests (``filestore``): one JSON-lines file per
session under ``$CRAB_HOME/filestore``, in crab's interchange format, so a second ``crab acp``
process can load a session the first one wrote. Small on purpose: no search, no fork."""

import json
import os
import time
from dataclasses import replace
from pathlib import Path

import crab


class FileStore:
    name = "filestore"

    def __init__(self) -> None:
        self.root = Path(os.environ["CRAB_HOME"]) / "filestore"

    async def open(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)

    async def close(self) -> None:
        return None

    def _path(self, session_id: str) -> Path:
        return self.root / f"{session_id}.jsonl"

    def _read(self, session_id: str) -> tuple[crab.storage.SessionInfo, list[crab.storage.Entry]]:
        path = self._path(session_id)
        if not path.exists():
            raise crab.StoreError(f"no session {session_id!r} in the file store")
        lines = [json.loads(line) for line in path.read_text().splitlines() if line]
        info = crab.storage.session_from_header(lines[0])
        entries = [e for e in (crab.storage.entry_from_dict(line, session_id) for line in lines[1:]) if e is not None]
        return info, entries

    async def create_session(self, workspace, *, title=None, meta=None):
        info = crab.storage.SessionInfo(
            id=crab.storage.new_session_id(),
            workspace=workspace,
            created=time.time(),
            title=title,
            meta=dict(meta or {}),
        )
        self._path(info.id).write_text(json.dumps(crab.storage.session_header(info)) + "\n")
        return info

    async def get_session(self, session_id):
        info, entries = self._read(session_id)
        return replace(info, updated=entries[-1].time if entries else info.created, entry_count=len(entries))

    async def list_sessions(self, workspace=None, limit=50):
        infos = [await self.get_session(p.stem) for p in self.root.glob("*.jsonl")]
        infos = [i for i in infos if workspace is None or i.workspace == workspace]
        return sorted(infos, key=lambda i: i.updated or i.created, reverse=True)[:limit]

    async def append(self, session_id, type, payload):
        _, entries = self._read(session_id)
        entry = crab.storage.Entry(
            id=crab.storage.new_entry_id(),
            session_id=session_id,
            parent_id=entries[-1].id if entries else None,
            type=type,
            time=time.time(),
            payload=dict(payload),
        )
        with self._path(session_id).open("a") as handle:
            handle.write(json.dumps(crab.storage.entry_to_dict(entry)) + "\n")
        return entry

    async def entries(self, session_id, *, since_handoff=False):
        _, entries = self._read(session_id)
        if since_handoff:
            marks = [i for i, e in enumerate(entries) if e.type == "anchor" and e.payload.get("kind") == "handoff"]
            return entries[marks[-1] :] if marks else entries
        return entries

    async def search(self, query, *, session_id=None, workspace=None, limit=20):
        return []

    async def fork(self, session_id, at_entry=None):
        raise crab.StoreError("the test file store cannot fork")


@crab.hookimpl
def crab_stores(config):
    return [FileStore()]
