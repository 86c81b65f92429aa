"""The model a user command's ``model:`` runs its turn on: the session is switched when that turn
records its prompt (``crab_prompt_submit``) and switched back as soon as the turn is over, or when
another turn of the session starts first (input queued behind the command keeps the session's model).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from crab import AgentHandle, CrabError, SessionView
from crab.events import Event, TurnStarted
from crab.hooks import Deny

SHOWN = 6
"""How many configured models the line for a model that is not configured names."""


def not_configured(handle: AgentHandle, session: SessionView, command: str, model: str) -> str | None:
    """The one line saying ``model`` cannot be used (None when it is configured): ``/model``'s
    rule, ``provider/model`` or a model of the session's provider that a loaded provider lists."""
    names = handle.models(session)
    provider = handle.session_model(session).partition("/")[0]
    if model in names or f"{provider}/{model}" in names:
        return None
    shown = ", ".join(names[:SHOWN]) + (", …" if len(names) > SHOWN else "")
    return (
        f"/{command} asks for the model {model!r}, which is not configured (configured: {shown}); change its "
        "model: line, or add the model to the provider's models table (docs/providers.md); `/model` lists them"
    )


@dataclass
class _Switch:
    """One running command's switch: what it asks for, and what it found and changed."""

    handle: AgentHandle
    session: SessionView
    command: str
    model: str
    prompt: str
    started: list[tuple[str, str]] = field(default_factory=list)
    """(turn id, input) of each turn of the session that started while the command ran."""
    turn: str | None = None
    previous: str | None = None
    chosen: str | None = None
    """``provider/model`` the session was switched to; None until (or unless) it was."""

    def seen(self, event: Event) -> None:
        if isinstance(event, TurnStarted):
            self.started.append((event.turn_id, event.input))


class ModelSwitches:
    """Every user command's switch of its session's model, while the command runs."""

    def __init__(self) -> None:
        self._running: dict[str, list[_Switch]] = {}

    @asynccontextmanager
    async def around(
        self, handle: AgentHandle, session: SessionView, command: str, model: str, prompt: str
    ) -> AsyncIterator[None]:
        """While the command sends ``prompt``: its turn runs on ``model``; afterwards (however the
        turn ended, an exception too) the session is back on the model it had."""
        switch = _Switch(handle, session, command, model, prompt)
        switches = self._running.setdefault(session.id, [])
        switches.append(switch)
        unsubscribe = handle.subscribe(switch.seen, session=session)
        try:
            yield
        finally:
            unsubscribe()
            switches.remove(switch)
            if not switches:
                self._running.pop(session.id, None)
            await self._restore(switch)

    async def prompt_submit(self, prompt: str, session_id: str) -> Deny | None:
        """Before a prompt of ``session_id`` is recorded: switch back a command whose turn is over
        (a later turn started), then switch for the command whose turn this prompt starts."""
        switches = self._running.get(session_id)
        if not switches:
            return None
        for switch in list(switches):
            if not switch.started:
                continue
            current, text = switch.started[-1]
            if switch.turn is not None and current != switch.turn:
                await self._restore(switch)
            elif switch.turn is None and text == prompt == switch.prompt:
                switch.turn = current
                refused = await self._switch(switch)
                if refused is not None:
                    return refused
        return None

    async def _switch(self, switch: _Switch) -> Deny | None:
        handle, session = switch.handle, switch.session
        switch.previous = handle.session_model(session)
        alone = "/" not in switch.model and switch.model == switch.previous.partition("/")[2]
        if switch.model == switch.previous or alone:
            return None  # the model the session is on already: nothing to switch, nothing recorded
        try:
            chosen = await handle.set_model(session, switch.model)
        except CrabError as exc:  # a provider that cannot be used now (its key is gone): one line
            return Deny(f"/{switch.command} cannot run on {switch.model}: {exc}")
        except Exception as exc:  # raising would fail the plugin, and a failed interceptor refuses every prompt
            return Deny(f"/{switch.command} cannot run on {switch.model}: {type(exc).__name__}: {exc}")
        if chosen != switch.previous:
            switch.chosen = chosen
            handle.notice(f"/{switch.command} runs on {chosen}; the session goes back to {switch.previous} after it")
        return None

    async def _restore(self, switch: _Switch) -> None:
        """Back to the model the session had, unless someone chose another since (``/model``)."""
        chosen, previous = switch.chosen, switch.previous
        switch.chosen = None
        if chosen is None or previous is None:
            return
        handle, session = switch.handle, switch.session
        if handle.session_model(session) != chosen:
            return
        try:
            await handle.set_model(session, previous)
        except Exception as exc:  # as above: never fail the plugin over a switch back; say it in one line
            shown = str(exc) if isinstance(exc, CrabError) else f"{type(exc).__name__}: {exc}"
            handle.notice(
                f"/{switch.command}: cannot switch back to {previous} ({shown}); /model {previous} does", "warning"
            )
            return
        handle.notice(f"model: {previous} again (/{switch.command} ran on {chosen})")
