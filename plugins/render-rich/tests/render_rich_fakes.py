"""A test plugin for crab-render-rich's end-to-end tests (installed by conftest into the
``ScriptedSite`` whose provider ``fake`` replays the script).

Tools: ``slow`` (sleeps, read), ``touch`` (write: the permission gate asks), ``pick`` (asks the
user a ``crab.Question`` through ``ctx.question``, as crab-ask's ``ask_user`` does) and ``plan``
(emits a ``crab.events.PlanEvent``, as crab-todo's ``todo`` does). Completions: ``@tiny:`` words
complete to the URIs ``RESOURCES`` holds, as crab-mcp's ``@server:uri`` do. Store ``rrfile``: sessions kept in
the JSON file ``$RENDER_RICH_STORE``, so ``crab chat -c`` has something to continue with only
core and this plugin installed.
"""

import asyncio
import json
import os
import time
from dataclasses import replace
from pathlib import Path

import crab


@crab.tool
async def slow(seconds: float) -> str:
    """Wait, then say so."""
    await asyncio.sleep(seconds)
    return f"waited {seconds} s\nsecond line\nthird line\nfourth line"


@crab.tool(permission="write")
def touch(path: str) -> str:
    """Create an empty file."""
    Path(path).touch()
    return f"created {path}"


class FileStore:
    """The least a store must do for ``crab chat`` and ``-c``, in one JSON file (no search, no fork)."""

    name = "rrfile"

    def __init__(self):
        self.path = Path(os.environ.get("RENDER_RICH_STORE", "store.json"))
        self.data = {"sessions": {}, "entries": {}}

    async def open(self):
        if self.path.is_file():
            self.data = json.loads(self.path.read_text())

    async def close(self):
        return None

    def _save(self):
        self.path.write_text(json.dumps(self.data))

    async def create_session(self, workspace, *, title=None, meta=None):
        info = crab.storage.SessionInfo(
            crab.storage.new_session_id(), workspace, time.time(), title=title, meta=dict(meta or {})
        )
        self.data["sessions"][info.id] = crab.storage.session_header(info)
        self.data["entries"][info.id] = []
        self._save()
        return info

    async def get_session(self, session_id):
        if session_id not in self.data["sessions"]:
            raise crab.StoreError(f"no session {session_id!r}")
        info = crab.storage.session_from_header(self.data["sessions"][session_id])
        entries = self.data["entries"][session_id]
        return replace(info, updated=entries[-1]["time"] if entries else info.created, entry_count=len(entries))

    async def list_sessions(self, workspace=None, limit=50):
        infos = [await self.get_session(sid) for sid in self.data["sessions"]]
        infos = [i for i in infos if workspace is None or i.workspace == workspace]
        return sorted(infos, key=lambda i: (i.updated or i.created, i.id), reverse=True)[:limit]

    async def append(self, session_id, type, payload):
        entries = self.data["entries"][session_id]
        entry = crab.storage.Entry(
            crab.storage.new_entry_id(),
            session_id,
            entries[-1]["id"] if entries else None,
            type,
            time.time(),
            dict(payload),
        )
        entries.append(crab.storage.entry_to_dict(entry))
        self._save()
        return entry

    async def entries(self, session_id, *, since_handoff=False):
        entries = [crab.storage.entry_from_dict(e, session_id) for e in self.data["entries"][session_id]]
        if since_handoff:
            handoffs = [i for i, e in enumerate(entries) if e.type == "anchor" and e.payload.get("kind") == "handoff"]
            entries = entries[handoffs[-1] :] if handoffs else entries
        return entries

    async def search(self, query, *, session_id=None, workspace=None, limit=20):
        return []

    async def fork(self, session_id, at_entry=None):
        raise crab.StoreError("the test store does not fork")


@crab.hookimpl
def crab_stores(config):
    return [FileStore()]


@crab.tool
async def pick(question: str, choices: list[str], ctx: crab.ToolContext) -> str:
    """Ask the user to pick one of ``choices``."""
    if ctx.question is None:
        return "nobody can answer"
    answer = await ctx.question(crab.Question(question, tuple(choices), free_text=False))
    return f"picked {answer}" if answer is not None else "no answer"


@crab.tool
async def plan(steps: list[str], current: int, ctx: crab.ToolContext, pause: float = 0.0) -> str:
    """Show a checklist: steps before ``current`` done, ``current`` in progress, the rest pending."""
    status = ["done" if n < current else "in_progress" if n == current else "pending" for n in range(len(steps))]
    ctx.emit(
        crab.events.PlanEvent(
            ctx.session_id, tuple(crab.events.PlanItem(s, st) for s, st in zip(steps, status, strict=True))
        )
    )
    await asyncio.sleep(pause)
    return "planned"


RESOURCES = {"tiny://note": "note (text/plain)", "tiny://pixel.png": "pixel (image/png)"}


@crab.hookimpl
def crab_completions(word):
    if not word.startswith("@tiny:"):
        return None
    typed = word[len("@tiny:") :]
    return [(f"@tiny:{uri}", about) for uri, about in RESOURCES.items() if uri.startswith(typed)]


@crab.hookimpl
def crab_tools(config):
    return [slow, touch, pick, plan]
