"""When checkpoints are taken and undone: per session, from the turn's start to its end.

``crab_event`` tells which turn is running (``TurnStarted``/``TurnEnded``); the first call of that
turn that may write (permission ``write``, or ``exec`` in a git work tree) takes the checkpoint
before it runs, and every such call records how it left the files once it ran. A session's
recording and its ``/undo`` take turns (one lock per session), and ``/undo`` waits for no turn:
while one runs it says so instead.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from crab import CommandContext, CommandResult, CrabError, Tool, ToolContext, ToolResult
from crab.config import crab_home
from crab.events import Event, NoticeEvent, TurnEnded, TurnStarted
from crab.messages import ToolCall
from crab.tools import preview_diffs

from crab_checkpoints.copy_store import CopyCheckpoints
from crab_checkpoints.git_store import GitCheckpoints
from crab_checkpoints.gitrun import work_tree_top
from crab_checkpoints.settings import Settings

LABEL_LIMIT = 60


def label_of(text: str) -> str:
    """A turn's input as a checkpoint's label: its first line, cut."""
    line = text.strip().splitlines()[0] if text.strip() else "(no text)"
    return line if len(line) <= LABEL_LIMIT else line[: LABEL_LIMIT - 1] + "…"


@dataclass
class Tracked:
    """One session: the running turn, its store (found at first need) and whether it has a checkpoint."""

    turn_id: str | None = None
    label: str = ""
    store: GitCheckpoints | CopyCheckpoints | None = None
    checkpointed: str | None = None
    """The turn whose checkpoint is taken."""
    pending: dict[str, list[str]] = field(default_factory=dict)
    """Outside git: the paths each running write call said it would change."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    warned: bool = False


class Recorder:
    """Every session's checkpoints for one plugin host."""

    def __init__(self, settings: Settings, home: Path | None = None) -> None:
        self.settings = settings
        self.home = home
        self.sessions: dict[str, Tracked] = {}

    def _tracked(self, session_id: str) -> Tracked:
        tracked = self.sessions.get(session_id)
        if tracked is None:  # not setdefault: that would build a Tracked (and its lock) on every call
            tracked = self.sessions[session_id] = Tracked()
        return tracked

    def watches(self, tool: Tool, session_id: str) -> bool:
        """Whether a call of ``tool`` in ``session_id`` is one a checkpoint is taken for (a turn's
        call that may write); the hooks ask first, so the other calls cost no coroutine."""
        tracked = self.sessions.get(session_id)
        return tracked is not None and self._watched(tool, tracked)

    async def _store(self, tracked: Tracked, session_id: str, workspace: Path) -> GitCheckpoints | CopyCheckpoints:
        if tracked.store is None:
            top = await work_tree_top(workspace, self.settings.git_timeout)
            if top is not None:
                tracked.store = GitCheckpoints(top, session_id, self.settings.git_timeout, self.settings.keep)
            else:
                tracked.store = CopyCheckpoints.for_session(
                    workspace.resolve(),
                    self.home if self.home is not None else crab_home(),
                    session_id,
                    keep=self.settings.keep,
                    max_file_bytes=self.settings.max_file_bytes,
                    max_total_bytes=self.settings.max_total_bytes,
                )
        return tracked.store

    # --- hooks --------------------------------------------------------------------------------

    def event(self, event: Event, session_id: str) -> None:
        if isinstance(event, TurnStarted):
            tracked = self._tracked(event.session_id or session_id)
            tracked.turn_id, tracked.label = event.turn_id, label_of(event.input)
        elif isinstance(event, TurnEnded):
            tracked = self._tracked(event.session_id or session_id)
            tracked.turn_id = None
            if tracked.store is not None:
                tracked.store.end_turn()

    def _watched(self, tool: Tool, tracked: Tracked) -> bool:
        if tracked.turn_id is None:
            return False  # not a turn (a `!cmd`): nothing to undo with /undo
        return tool.permission == "write" or (tool.permission == "exec" and self.settings.before_exec)

    async def before_call(self, call: ToolCall, tool: Tool, ctx: ToolContext) -> None:
        tracked = self._tracked(ctx.session_id)
        if not self._watched(tool, tracked):
            return
        async with tracked.lock:
            try:
                store = await self._store(tracked, ctx.session_id, ctx.workspace)
                if isinstance(store, CopyCheckpoints):
                    if tool.permission != "write":
                        return  # outside git only the files a tool names can be kept
                    paths = self._paths(ctx.workspace, await preview_diffs(tool, call.arguments, ctx), store.root)
                    tracked.pending[call.id] = paths
                    if tracked.checkpointed != tracked.turn_id:
                        store.begin(tracked.label)
                        tracked.checkpointed = tracked.turn_id
                    store.remember(paths)
                elif tracked.checkpointed != tracked.turn_id:
                    await store.begin(tracked.label)
                    tracked.checkpointed = tracked.turn_id
            except Exception as exc:  # a failing interceptor would refuse every call from now on
                self._warn(tracked, ctx, exc)

    async def after_call(self, call: ToolCall, tool: Tool, result: ToolResult, ctx: ToolContext) -> None:
        tracked = self._tracked(ctx.session_id)
        if not self._watched(tool, tracked) or tracked.checkpointed != tracked.turn_id or tracked.store is None:
            return
        async with tracked.lock:
            try:
                store = tracked.store
                if isinstance(store, CopyCheckpoints):
                    named = self._paths(ctx.workspace, result.diffs, store.root)
                    store.settle([*tracked.pending.pop(call.id, []), *named])
                else:
                    await store.finish()
            except Exception as exc:  # a failing interceptor would refuse every call from now on
                self._warn(tracked, ctx, exc)

    @staticmethod
    def _paths(workspace: Path, diffs: object, root: Path) -> list[str]:
        paths: list[str] = []
        for diff in diffs:  # type: ignore[attr-defined]
            file = (workspace / diff.path).resolve()
            if file.is_relative_to(root):
                paths.append(file.relative_to(root).as_posix())
        return paths

    def _warn(self, tracked: Tracked, ctx: ToolContext, exc: Exception) -> None:
        """A checkpoint that could not be taken never stops the call (a raising interceptor
        refuses it, and keeps refusing for the run): the user is told, once per session."""
        if not tracked.warned:
            tracked.warned = True
            said = str(exc) if isinstance(exc, CrabError | OSError) else f"{type(exc).__name__}: {exc}"
            ctx.emit(NoticeEvent(f"checkpoints: {said}; /undo may not cover this turn", "warning"))

    # --- /undo --------------------------------------------------------------------------------

    async def undo(self, ctx: CommandContext, args: str) -> CommandResult:
        text = args.strip()
        if text and (not text.isdigit() or int(text) < 1):
            return CommandResult("usage: /undo [N] (N: how many turns to go back, 1 or more)", is_error=True)
        count = int(text or 1)
        tracked = self._tracked(ctx.session.id)
        if tracked.turn_id is not None:
            return CommandResult("a turn is running: /abort it or wait for it to end, then /undo", is_error=True)
        async with tracked.lock:
            try:
                store = await self._store(tracked, ctx.session.id, ctx.session.workspace)
                if isinstance(store, CopyCheckpoints):
                    said = store.undo(count)
                else:
                    said = await store.undo(count)
            except (CrabError, OSError) as exc:
                return CommandResult(str(exc), is_error=True)
        return CommandResult(said, is_error=said.startswith("nothing undone"))
