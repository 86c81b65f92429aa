"""``Sessions``: opening, resuming and leaving the sessions of one agent's store and workspace: a
resume repairs what a killed process left open, restores the session's model, and every session
opened is left once (``crab_session_end``)."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crab._config.paths import live_home
from crab._contracts.storage import SessionInfo, Store
from crab._host.dispatch import Dispatcher
from crab._loop.model_choice import Models
from crab._loop.recorder import PARENT_SESSION_META, Recorder
from crab._loop.session import Session
from crab._system.live_sessions import no_turn_running
from crab._values.history import load_history
from crab._values.model_choice import stored_choice

if TYPE_CHECKING:
    from crab._contracts.handle import AgentHandle

LATEST_SCAN = 50
"""Sessions ``latest`` looks through for the latest one that is not a child session."""
CHANNEL_META = "crab.channel"
"""Session ``meta`` key naming the channel a keyed session belongs to."""
ADDRESS_META = "crab.address"
"""Session ``meta`` key naming the address (a chat id) within that channel."""
SCAN_LIMIT = 10_000
"""A keyed session is looked for among this many most recently updated sessions of the workspace."""


class Sessions:
    """The sessions of ``store`` in ``workspace``; ``handle`` is what ``crab_session_end`` gets."""

    def __init__(
        self,
        store: Store,
        workspace: Path,
        recorder: Recorder,
        models: Models,
        dispatch: Dispatcher,
        handle: AgentHandle,
        notice: Callable[[str, str], None],
    ) -> None:
        self.store = store
        self.workspace = workspace
        self.recorder = recorder
        self.models = models
        self.dispatch = dispatch
        self.handle = handle
        self.notice = notice
        self._open: weakref.WeakSet[Session] = weakref.WeakSet()
        """Sessions opened here and not left yet: each gets ``crab_session_end`` at ``leave_all``
        (weak: one a caller dropped without leaving ends with ``crab_shutdown`` instead)."""

    async def new(self, title: str | None = None, meta: Mapping[str, Any] | None = None) -> Session:
        info = await self.store.create_session(str(self.workspace), title=title, meta=meta)
        return self.opened(Session(info=info, workspace=self.workspace))

    def opened(self, session: Session) -> Session:
        """Count ``session`` as open here (``leave`` or ``close`` ends it); returns it."""
        self._open.add(session)
        return session

    async def leave(self, session: Session, reason: str = "switch") -> None:
        """The agent is done with ``session``: ``crab_session_end`` ends what plugins keep
        running for it (background jobs); its entries stay in the store. Once per session."""
        if session not in self._open:
            return
        self._open.discard(session)
        await self.dispatch.lifecycle("crab_session_end", agent=self.handle, session_id=session.id, reason=reason)

    async def switch(self, session: Session, session_id: str) -> Session:
        """Move from ``session`` to the stored ``session_id`` (``CommandResult.switch_session``):
        the new one is resumed first (a ``StoreError`` leaves the old one as it was), then the
        old one is left."""
        if session_id == session.id:
            return session
        resumed = await self.resume(session_id)
        await self.leave(session, "switch")
        return resumed

    async def resume(self, session_id: str) -> Session:
        """Load a stored session and repair what will go to the provider.

        A tool call the store holds no result for (crab was killed while it ran) gets its
        stand-in result stored now, once, so the stored session pairs every call too, and so
        does every child session such a call started (``Recorder.pair_after_crash``).
        """
        # Read and repair holding the session's lock alone: a call with no result whose turn still
        # runs in another process (or task) gets its real result there, so none is stored here.
        with no_turn_running(live_home(), session_id) as alone:
            info = await self.store.get_session(session_id)
            entries = await self.store.entries(session_id, since_handoff=True)
            history = load_history(entries)
            workspace = Path(info.workspace) if info.workspace else self.workspace
            if alone:  # a call killed while it ran a child session left that child open too
                await self.recorder.pair_after_crash(session_id, str(workspace), history.missing)
        if history.skipped:
            self.notice(f"{history.skipped} unreadable entries in session {session_id} were left out", "warning")
        session = Session(
            info=info,
            workspace=workspace,
            messages=history.messages,
            handoff=dict(history.handoff) if history.handoff else None,
            shared=not alone,
        )
        self.models.restore(session, stored_choice(entries))
        return self.opened(session)

    async def recent(self, limit: int = 10) -> list[SessionInfo]:
        """This workspace's sessions, most recently updated first."""
        return await self.store.list_sessions(str(self.workspace), limit=limit)

    async def latest(self) -> Session | None:
        """The most recently updated session of this workspace, resumed; None if there is none.
        A child session (one a tool call started, ``crab._loop.child``) is its parent's part, not
        a conversation to continue: the latest of the last few that is not one."""
        sessions = await self.store.list_sessions(str(self.workspace), limit=LATEST_SCAN)
        own = [info for info in sessions if not (info.meta or {}).get(PARENT_SESSION_META)]
        chosen = own[0] if own else (sessions[0] if sessions else None)
        return await self.resume(chosen.id) if chosen is not None else None

    async def leave_all(self) -> None:
        """Leave every session still open (at the agent's close)."""
        ended: set[str] = set()
        for session in list(self._open):
            if session.id in ended:  # a stray second object of one session (/new made it)
                self._open.discard(session)
                continue
            ended.add(session.id)
            await self.leave(session, "shutdown")

    async def keyed(self, channel: str, address: str) -> Session:
        """The most recently updated session keyed ``(channel, address)`` in this workspace, resumed,
        or a new one carrying that key (a channel's conversation: ``AgentHandle.session_for``)."""
        for info in await self.store.list_sessions(str(self.workspace), limit=SCAN_LIMIT):
            meta = info.meta or {}
            if meta.get(CHANNEL_META) == channel and meta.get(ADDRESS_META) == address:
                return await self.resume(info.id)
        meta = {CHANNEL_META: channel, ADDRESS_META: address}
        return await self.new(f"{channel} {address}", meta)
