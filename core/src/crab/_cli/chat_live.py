"""``crab chat`` with a live input (a renderer's ``crab.rendering.ChatInput``): the user types while a turn
works; Enter steers, Alt-Enter queues a follow-up, Ctrl-C at an empty line aborts the turn."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from crab._contracts.events import Event
from crab._contracts.renderers import ChatEntry, ChatInput, ChatState
from crab._loop.session import Session, TurnOutcome

if TYPE_CHECKING:
    from crab._loop.agent import Agent

LEAVE_HINT = "Ctrl-C again (or Ctrl-D) leaves"


class LiveChat:
    """One live chat: the session, the work it runs and what ``ChatState`` shows.

    A steer is taken by the loop after the current tool call, a follow-up after the turn;
    ``ChatState`` shows both as pending until then. An abort leaves the session valid (the loop
    pairs every open call). At an idle prompt Ctrl-C twice in a row leaves, as does Ctrl-D or ``/quit``.
    """

    def __init__(self, agent: Agent, session: Session, front: ChatInput, state: ChatState) -> None:
        self.agent = agent
        self.session = session
        self.front = front
        self.state = state
        self.work: set[asyncio.Task[TurnOutcome]] = set()
        self.armed = False  # one Ctrl-C came at an idle, empty prompt
        self.done = False

    def sync(self, _event: Event | None = None) -> None:
        """Copy the session's queues into ``ChatState`` (on every event: the loop takes input quietly)."""
        session = self.session
        state = self.state
        busy = session.busy or any(not task.done() for task in self.work)
        steering = tuple(item.text for item in session.steering)
        follow_ups = tuple(item.text for item in session.follow_ups)
        if (busy, steering, follow_ups) != (state.busy, state.steering, state.follow_ups):
            state.busy, state.steering, state.follow_ups = busy, steering, follow_ups
            self.front.refresh()

    def _hint(self, text: str) -> None:
        if self.state.hint != text:
            self.state.hint = text
            self.front.refresh()

    def submit(self, entry: ChatEntry) -> None:
        """Act on one entry of the input."""
        if entry.kind == "exit":
            self.done = True
            return
        if entry.kind == "interrupt":
            running = [task for task in self.work if not task.done()]
            if self.session.busy:
                self.agent.abort(self.session)
                self.armed = False
                self._hint("")
            elif running:  # a `!cmd` or a command, not a turn: stop it (its processes end with it)
                for task in running:
                    task.cancel()
                self.armed = False
                self._hint("")
            elif self.armed:
                self.done = True
            else:
                self.armed = True
                self._hint(LEAVE_HINT)
            return
        self.armed = False
        self._hint("")
        text = entry.text
        if not text.strip():
            return
        steer = entry.kind == "send"
        from crab._cli.attach import send_line  # @pic.png in the line attaches it

        task = asyncio.ensure_future(send_line(self.agent, self.session, text, steer=steer))
        self.work.add(task)
        # handle_input queues synchronously only once it runs: let it, then show the queues.
        asyncio.get_running_loop().call_soon(self.sync)

    async def finished(self, task: asyncio.Task[TurnOutcome]) -> None:
        """A turn, steer, follow-up or command ended: leave or switch sessions as it asked."""
        self.work.discard(task)
        if task.cancelled():  # Ctrl-C stopped a `!cmd` or a command: show it is over
            self.sync()
            return
        outcome = task.result()
        if outcome.quit:
            self.done = True
            return
        if outcome.clear_screen:
            from crab._cli.chat_sessions import clear_screen

            clear_screen(self.agent, self.session, outcome.text, self.front)
        if outcome.switch_session and not self.session.busy:
            from crab._cli.chat_sessions import show_switch

            self.session = await self.agent.switch(self.session, outcome.switch_session)
            show_switch(self.agent, self.session)
        self.sync()

    async def stop(self) -> None:
        """Abort what runs and wait for it to settle (every open tool call paired); a `!cmd` or a
        command that is not a turn is cancelled (an abort does not reach it)."""
        if self.session.busy:
            self.agent.abort(self.session)
        else:
            for task in self.work:
                task.cancel()
        for task in list(self.work):
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self.work.clear()

    async def run(self) -> None:
        reading: asyncio.Task[ChatEntry] = asyncio.ensure_future(self.front.read())
        try:
            while not self.done:
                waiting: set[asyncio.Future[object]] = {reading, *self.work}  # type: ignore[arg-type]
                ready, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                for task in list(self.work):
                    if task in ready:
                        await self.finished(task)
                if reading in ready:
                    self.submit(reading.result())
                    if not self.done:
                        reading = asyncio.ensure_future(self.front.read())
        finally:
            if not reading.done():
                reading.cancel()
                try:
                    await reading
                except (asyncio.CancelledError, Exception):
                    pass
            await self.stop()


async def live_chat(agent: Agent, session: Session, front: ChatInput, state: ChatState) -> Session:
    """Run the chat until the user leaves (the renderer, already subscribed, shows the turns);
    returns the session it ended in (``/new``, ``/resume`` and ``/fork`` switch sessions)."""
    chat = LiveChat(agent, session, front, state)
    unsubscribe = agent.subscribe(chat.sync)
    try:
        await chat.run()
    finally:
        unsubscribe()
    return chat.session
