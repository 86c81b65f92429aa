"""``crab serve``'s channels in one process: supervised, addressable, keyed sessions, drained
(docs/architecture.md#crab-serve). Running channels beside an agent is composition, not the loop:
the agent only routes ``session_for``/``deliver`` to the host it is given (``Agent.channel_host``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from crab._contracts.errors import ChannelError, ConfigError, CrabError, UsageError

if TYPE_CHECKING:
    from crab._contracts.channels import Channel
    from crab._contracts.interception import Answer, PermissionRequest
    from crab._contracts.questions import Question
    from crab._loop.agent import Agent
    from crab._loop.session import QueuedInput, Session, TurnOutcome

SETTLE_SECONDS = 1.0
"""After the grace period, how long cancelled turns get to settle before the host gives up on them."""


class ChannelHost:
    """Runs ``channels`` with one agent: supervision, delivery, keyed sessions and drain.

    Each channel runs in a task of its own. One whose ``run`` raises is reported (a warning
    notice) and restarted after a wait that doubles from ``restart_delay`` up to
    ``restart_max_delay``; the others go on. A ``ConfigError`` or ``UsageError`` ends that channel
    for good (restarting would not fix its setup; ``broken``). A channel whose ``run`` returns has
    closed and is not restarted; the host ends when every channel has (``crab serve`` exits 2 when
    every one ended on a setup error).
    """

    def __init__(
        self,
        agent: Agent,
        channels: Mapping[str, Channel],
        *,
        grace: float = 30.0,
        restart_delay: float = 1.0,
        restart_max_delay: float = 60.0,
        engine: Callable[..., Awaitable[Any]] | None = None,
    ) -> None:
        self.agent = agent
        self.channels = dict(channels)
        self.grace = grace
        self.restart_delay = restart_delay
        self.restart_max_delay = max(restart_max_delay, restart_delay)
        self.running: set[str] = set()
        self.broken: dict[str, str] = {}
        """Channels that ended on a setup error (``ConfigError``), with its line."""
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.sessions: dict[tuple[str, str], Session] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._stop: asyncio.Event | None = None
        self.stopping = False
        self.engine = engine
        """The turn engine ``[serve] engine`` names: channels' turns run on it (``engine_turn``)."""
        agent.channel_host = self

    async def engine_turn(self, session: Session, item: QueuedInput, queue: Any) -> TurnOutcome:
        """A channel's turn on ``engine`` (``crab._assembly.engine_turn``)."""
        from crab._assembly.engine_turn import engine_turn

        assert self.engine is not None
        return await engine_turn(self.agent, self.engine, session, item, queue)

    # --- running ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Run every channel until all have closed, or until ``request_stop`` has drained them."""
        from crab._loop.handle import LoopHandle as AgentHandle

        self._stop = stop = asyncio.Event()
        handle = AgentHandle(self.agent)
        self.tasks = {
            name: asyncio.create_task(self._supervise(name, channel, handle), name=f"crab-channel-{name}")
            for name, channel in self.channels.items()
        }
        waiter = asyncio.create_task(stop.wait())
        try:
            pending: set[asyncio.Future[Any]] = set(self.tasks.values())
            while pending and not stop.is_set():
                _, pending = await asyncio.wait({waiter, *pending}, return_when=asyncio.FIRST_COMPLETED)
                pending.discard(waiter)
            if stop.is_set():
                await self._drain()
        finally:
            waiter.cancel()
            await self._cancel_all()

    def request_stop(self, signum: int = 0) -> bool:
        """Begin the drain (called in the event loop, e.g. from the SIGTERM handler).

        Channels that have a ``stop()`` are asked to take no more input (those without
        ``deliver``, such as a scheduler, first, so what they finish can still be delivered
        through the others), running turns get ``grace`` seconds to finish, then whatever still
        runs is cancelled (a cancelled turn is aborted and settled, so its session stays whole).
        False while the channels have not started (the agent is still starting): nothing to
        drain yet, so ``crab serve`` stops the start-up instead.
        """
        if self._stop is None:
            return False
        self._stop.set()
        return True

    async def _supervise(self, name: str, channel: Channel, handle: Any) -> None:
        delay = self.restart_delay
        while not self.stopping:
            started = time.monotonic()
            self.running.add(name)
            try:
                await channel.run(handle)
                return
            except (ConfigError, UsageError) as exc:
                self.agent.notice(f"channel {name} stopped: {exc}", "warning")
                self.broken[name] = str(exc)
                return
            except Exception as exc:
                if self.stopping:
                    return
                if time.monotonic() - started > self.restart_max_delay:
                    delay = self.restart_delay  # it had been running fine: start the backoff afresh
                self.agent.notice(
                    f"channel {name} failed: {type(exc).__name__}: {exc}; restarting in {delay:g}s", "warning"
                )
            finally:
                self.running.discard(name)
            await self._pause(delay)
            delay = min(delay * 2, self.restart_max_delay)

    async def _pause(self, seconds: float) -> None:
        """Sleep ``seconds``, or less when a stop is requested."""
        if self._stop is None:
            await asyncio.sleep(seconds)
            return
        try:
            await asyncio.wait_for(self._stop.wait(), seconds)
        except TimeoutError:
            pass

    async def _drain(self) -> None:
        self.stopping = True
        busy = len(self.agent.busy)
        self.agent.notice(
            f"stopping: waiting up to {self.grace:g}s for {busy} running turn{'s' if busy != 1 else ''}"
            if busy
            else "stopping"
        )
        stoppable: list[asyncio.Task[None]] = []
        deadline = time.monotonic() + self.grace
        # Channels that cannot deliver (a scheduler) stop first and finish their work while the
        # channels it delivers to still run; then the others.
        senders = [name for name, channel in self.channels.items() if not callable(getattr(channel, "deliver", None))]
        for group in (senders, [name for name in self.channels if name not in senders]):
            for name in group:
                stop = getattr(self.channels[name], "stop", None)
                if callable(stop) and not self.tasks[name].done():
                    stoppable.append(self.tasks[name])
                    try:
                        await stop()
                    except Exception as exc:
                        self.agent.notice(f"channel {name} failed to stop: {type(exc).__name__}: {exc}", "warning")
            if group is senders and stoppable:
                await asyncio.wait(stoppable, timeout=max(deadline - time.monotonic(), 0))
        if not await self._settled(stoppable, max(deadline - time.monotonic(), 0)):
            left = len(self.agent.busy)
            if left:
                turns = f"{left} running turn{'s' if left != 1 else ''}"
                self.agent.notice(f"grace period over: aborting {turns}", "warning")

    async def _settled(self, tasks: list[asyncio.Task[None]], seconds: float) -> bool:
        """Wait until no turn runs and ``tasks`` are done; False when ``seconds`` ran out first."""
        deadline = time.monotonic() + seconds
        while True:
            waiting: list[asyncio.Future[Any]] = [t for t in tasks if not t.done()]
            waiting += [s.task for s in self.agent.busy if s.task is not None]
            if not waiting and not self.agent.busy:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if waiting and not all(w.done() for w in waiting):
                await asyncio.wait(waiting, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            else:  # between two queued turns of a session: let its loop start the next one
                await asyncio.sleep(0.01)

    async def _cancel_all(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        for session in list(self.agent.busy):  # turns started outside a channel's task
            self.agent.abort(session)
        await self._settled([], SETTLE_SECONDS)

    # --- delivery -----------------------------------------------------------------------------

    async def deliver(self, channel: str, address: str, text: str) -> None:
        """Send ``text`` (redacted) to ``address`` through the channel's ``deliver(address, text)``.

        A plugin (a scheduler) writes to a chat so without importing the channel. ``ChannelError``
        says why it cannot: no such channel here, one that cannot deliver, or one not running now.
        """
        target = self.channels.get(channel)
        if target is None:
            running = ", ".join(sorted(self.channels)) or "none"
            raise ChannelError(f"no channel named {channel!r} runs in this crab serve (running: {running})")
        deliver = getattr(target, "deliver", None)
        if not callable(deliver):
            raise ChannelError(f"channel {channel!r} cannot deliver messages")
        if channel not in self.running:
            raise ChannelError(f"channel {channel!r} is not running right now (it failed and restarts, or it closed)")
        try:
            await deliver(address, self.agent.redactor.text(text))
        except ChannelError:
            raise
        except CrabError as exc:
            raise ChannelError(f"delivery to {channel} {address} failed: {exc}") from None
        except Exception as exc:
            raise ChannelError(f"delivery to {channel} {address} failed: {type(exc).__name__}: {exc}") from None

    # --- keyed sessions -----------------------------------------------------------------------

    async def session_for(self, channel: str, address: str, *, session_id: str | None = None) -> Session:
        """The live session of ``address`` on ``channel`` (opened or resumed once, then kept).

        Found by the store's session ``meta`` (``Sessions.keyed``: ``CHANNEL_META``/``ADDRESS_META``, which every
        store keeps and a fork copies) or created, and kept, so queues and per-session state hold
        for the life of the process. The permission gate asks through the channel's
        ``ask(address, request)`` for its tool calls (refusing without one), and a tool's
        ``crab.Question`` goes to ``ask_question(address, question)`` (nobody answers without one).
        With ``session_id`` the conversation moves to that stored session (after ``/new``,
        ``/fork``), and the one it leaves ends (``Agent.switch``: ``crab_session_end``).
        """
        key = (channel, address)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            session = self.sessions.get(key)
            if session_id is not None and session is not None and session.id != session_id:
                session = await self.agent.switch(session, session_id)
            elif session_id is not None and session is None:
                session = await self.agent.resume(session_id)
            elif session is None:
                session = await self.agent.sessions.keyed(channel, address)
            ask = getattr(self.channels.get(channel), "ask", None)
            if callable(ask):
                session.ask = partial(_ask, ask, address)
            question = getattr(self.channels.get(channel), "ask_question", None)
            if callable(question):
                session.question = partial(_question, question, address)
            self.sessions[key] = session
            return session

    def release(self, session: Session) -> None:
        """Keep ``session`` no longer (``Agent.end_session``): a later ``session_for`` of its
        address resumes it from the store."""
        for key, kept in list(self.sessions.items()):
            if kept is session:
                del self.sessions[key]
                lock = self._locks.get(key)
                if lock is not None and not lock.locked():
                    del self._locks[key]


async def _ask(ask: Any, address: str, request: PermissionRequest) -> Answer:
    """A channel's ``ask(address, request)``; anything but a known answer refuses (a
    ``TimeoutError``, the channel's "nobody answered", reaches the gate, which says so)."""
    try:
        answer = await ask(address, request)
    except (asyncio.CancelledError, TimeoutError):
        raise
    except Exception:
        return "deny"
    return answer if answer in ("once", "always", "deny") else "deny"


async def _question(ask_question: Any, address: str, question: Question) -> str | None:
    """A channel's ``ask_question(address, question)``; a failure is no answer (the tool says so)."""
    try:
        answer = await ask_question(address, question)
    except asyncio.CancelledError:
        raise
    except Exception:
        return None
    return answer if isinstance(answer, str) else None
