"""Resource subscriptions: a resource the model read stays fresh while crab runs.

When a server offers ``resources.subscribe``, ``mcp_read_resource`` subscribes to the URI it
read (at most ``MAX_PER_SERVER`` per server) and remembers which sessions read it. On
``notifications/resources/updated`` crab reads the resource again and, for each of those
sessions (one read at a time per resource, then one more at most ``REREAD_EVERY`` later
however many updates came meanwhile), shows a notice to the user at once and keeps the new content (the latest only, cut
at ``MAX_NOTE`` characters, fenced as the server's content) for the model: it is added after
the next tool result of that session (``crab_after_tool_call``), the first place the model reads
new text in the history without crab inventing a user message. ``stop`` unsubscribes
everything before the servers stop. Subscriptions survive a restart: a stdio server holding
some that exits by itself is started again at once (waiting out the backoff while it fails),
and every connection that comes up (that restart, or one a call made) subscribes again to
what the sessions watched and reads each resource again, so the model's view is fresh. A server
that keeps exiting soon after it came up is started again at most ``MAX_QUICK_RESTARTS`` times
in a row (each later than the last), then left down with one notice: the next call starts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crab import ToolContext, ToolResult

    from crab_mcp.manager import Manager
    from crab_mcp.server import ServerLink

MAX_PER_SERVER = 50
"""URIs crab subscribes to on one server at most (then it reads without subscribing)."""
MAX_NOTE = 8_000
"""Characters of one updated resource's content kept for the model."""
MAX_QUICK_RESTARTS = 3
"""Restarts in a row of a server that exited within ``QUICK_EXIT`` seconds of coming up; then
crab stops starting it by itself (a hostile or broken server would loop crab in restarts)."""
QUICK_EXIT = 30.0
"""Seconds after a connection came up within which its server's exit counts as a quick one."""
REREAD_EVERY = 1.0
"""Seconds between two reads of one resource that keeps changing (the model gets the latest)."""
UNSUBSCRIBE_WITHIN = 2.0
"""Seconds ``stop`` waits for one server to acknowledge its unsubscriptions."""


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The SDK warns that ``resources/subscribe`` is gone on 2026-07-28 connections, which crab
    does not make (it connects legacy): not a warning for crab's user."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@dataclass
class _Watched:
    """One subscribed URI: the contexts of the sessions that read it (to show the notice)."""

    contexts: dict[str, ToolContext] = field(default_factory=dict)


class Watch:
    """The subscriptions of one manager (see the module docstring)."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.watched: dict[tuple[str, str], _Watched] = {}
        self.pending: dict[str, dict[tuple[str, str], str]] = {}
        """session id → (server, uri) → the note for the model, the latest update only."""
        self._tasks: set[asyncio.Task[None]] = set()
        self.delivered = 0
        """Notes handed to the model so far."""
        self._up_at: dict[str, float] = {}
        """server → when its connection last came up (``time.monotonic``)."""
        self._quick: dict[str, int] = {}
        """server → its quick exits in a row (``QUICK_EXIT``)."""
        self._reading: set[tuple[str, str]] = set()
        """(server, uri) read again now after an update."""
        self._again: set[tuple[str, str]] = set()
        """(server, uri) updated again while that read ran: read once more after it."""

    async def after_read(self, link: ServerLink, uri: str, ctx: ToolContext | None) -> None:
        """Subscribe to ``uri`` (once per connection) and remember that ``ctx``'s session read it."""
        if ctx is None or not link.can_subscribe:
            return
        if not await self._subscribe(link, uri):
            return
        self.watched.setdefault((link.name, uri), _Watched()).contexts[ctx.session_id] = ctx

    async def _subscribe(self, link: ServerLink, uri: str) -> bool:
        """Whether ``uri`` is subscribed to on the link's connection (subscribing now if not)."""
        if uri in link.subscribed:
            return True
        if len(link.subscribed) >= MAX_PER_SERVER:
            return False
        try:
            with _quiet():
                await link.request(f"resources/subscribe {uri}", "subscribe_resource", uri)
        except Exception as exc:  # the read worked; no subscription is no failure of the call
            link.peer._note(f"subscribing to {uri} failed: {type(exc).__name__}: {exc}")
            return False
        link.subscribed.add(uri)
        return True

    def _spawn(self, link: ServerLink, what: str, work: Any) -> None:
        task = asyncio.create_task(work, name=f"crab-mcp-{link.name}-{what}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _uris(self, link: ServerLink) -> list[str]:
        return sorted(uri for name, uri in self.watched if name == link.name)

    def updated(self, link: ServerLink, uri: str) -> None:
        """The server said ``uri`` changed: read it again in the background. While a read of it
        runs, more updates make one more read after it (``REREAD_EVERY`` after the last began),
        never one each (a server may send thousands)."""
        key = (link.name, uri)
        if key not in self.watched:
            return
        if key in self._reading:
            self._again.add(key)
            return
        self._reading.add(key)
        self._spawn(link, "updated", self._refresh_while_changed(link, uri))

    async def _refresh_while_changed(self, link: ServerLink, uri: str) -> None:
        key = (link.name, uri)
        try:
            while True:
                self._again.discard(key)
                began = time.monotonic()
                await self._refresh(link, uri)
                if key not in self._again:
                    return
                await asyncio.sleep(max(0.0, began + REREAD_EVERY - time.monotonic()))
        finally:
            self._reading.discard(key)
            self._again.discard(key)

    def ready(self, link: ServerLink) -> None:
        """A connection came up: on a new one (a restart) subscribe again to what was watched."""
        self._up_at[link.name] = time.monotonic()
        if any(uri not in link.subscribed for uri in self._uris(link)):
            self._spawn(link, "resubscribe", self._resubscribe(link))

    def lost(self, link: ServerLink) -> None:
        """A stdio server exited by itself: start it again now when it holds subscriptions (later
        after each quick exit, never after ``MAX_QUICK_RESTARTS`` of them in a row)."""
        if not self._uris(link):
            return
        quick = time.monotonic() - self._up_at.get(link.name, float("-inf")) < QUICK_EXIT
        count = self._quick[link.name] = self._quick.get(link.name, 0) + 1 if quick else 0
        if count > MAX_QUICK_RESTARTS:
            self.manager.notice(
                f"MCP server {link.name!r} exited {count} times in a row within {QUICK_EXIT:g} s of starting; "
                "crab gave up starting it again by itself (the next call that needs it starts it)"
            )
            return
        self._spawn(link, "restart", self._restart(link, 0.5 * 2 ** (count - 1) if count else 0.0))

    async def _restart(self, link: ServerLink, delay: float) -> None:
        from crab_mcp.server import ServerDown

        await asyncio.sleep(delay)
        while self._uris(link) and link.status != "ready":
            try:
                await link.ensure()  # ``ready`` subscribes again once it is up
            except ServerDown:
                await asyncio.sleep(max(link.retry_in, 0.5))

    async def _resubscribe(self, link: ServerLink) -> None:
        for uri in self._uris(link):
            if await self._subscribe(link, uri):
                await self._refresh(link, uri, restarted=True)

    async def _refresh(self, link: ServerLink, uri: str, *, restarted: bool = False) -> None:
        from crab.events import NoticeEvent
        from crab.secrets import Redactor, known_secrets

        from crab_mcp.resources import read

        key = (link.name, uri)
        fresh = await read(self.manager, link.name, uri)
        # Masked whole before the cut: a secret the cut split would keep its first part unmasked.
        content = Redactor(known_secrets(link.agent_config)).text(fresh.content)
        if len(content) > MAX_NOTE:
            content = f"{content[:MAX_NOTE]}\n[… cut: {len(content):,} characters; read it with mcp_read_resource]"
        if restarted:
            note = f"MCP server {link.name!r} started again since you read its resource {uri} (it may have changed)"
            what = f"MCP {link.name}: started again; resource {uri} read again"
        else:
            note = f"MCP resource {uri} of server {link.name!r} changed since you read it"
            what = f"MCP {link.name}: resource {uri} changed"
        note = f"{note}; crab read it again:\n{content}"
        for session_id, ctx in list(self.watched.get(key, _Watched()).contexts.items()):
            waiting = self.pending.setdefault(session_id, {})
            first = key not in waiting
            waiting[key] = note
            if first:  # one notice until the model has seen it, however often the server says so
                ctx.emit(NoticeEvent(f"{what}; the model sees it after its next tool call"))

    def note_into(self, result: ToolResult, session_id: str) -> ToolResult | None:
        """``result`` with the updates waiting for ``session_id`` after it (None when there are none)."""
        waiting = self.pending.pop(session_id, None)
        if not waiting:
            return None
        self.delivered += len(waiting)
        notes = "\n\n".join(waiting.values())
        return replace(result, content=f"{result.content}\n\n{notes}")

    async def stop(self) -> None:
        """Unsubscribe everything (each server bounded by ``UNSUBSCRIBE_WITHIN``), end refreshes."""
        for task in list(self._tasks):
            task.cancel()

        async def leave(link: ServerLink) -> None:
            for uri in sorted(link.subscribed):
                with contextlib.suppress(Exception), _quiet():
                    await link.request(f"resources/unsubscribe {uri}", "unsubscribe_resource", uri)
            link.subscribed.clear()

        links = [link for link in self.manager.links.values() if link.subscribed and link.status == "ready"]
        await asyncio.gather(
            *(asyncio.wait_for(leave(link), UNSUBSCRIBE_WITHIN) for link in links), return_exceptions=True
        )
        self.watched.clear()
        self.pending.clear()
