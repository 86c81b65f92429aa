"""A channel's turn on the turn engine ``[serve] engine`` names (``crab_turn_engines``): the live
session handed to the engine as a ``TurnSteps``, its steering and abort passed on, the live
session read back from the store when the turn ends (docs/architecture.md#crab-serve): only
``crab serve`` hands turns to an engine, so it lives beside its channels, not in the loop."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from crab._contracts.errors import CrabError
from crab._contracts.events import ErrorEvent, TurnEnded
from crab._loop.session import QueuedInput, Session, TurnOutcome
from crab._loop.turn_steps import TurnSteps
from crab._values.history import load_history

if TYPE_CHECKING:
    from crab._loop.agent import Agent

__all__ = ["engine_turn"]

NO_IMAGES = "this crab serve runs turns on a turn engine ([serve] engine), which takes text only"


async def engine_turn(
    agent: Agent, engine: Callable[..., Awaitable[Any]], session: Session, item: QueuedInput, queue: Any
) -> TurnOutcome:
    """Run ``item`` of ``session`` on ``engine``; never raises but on a cancellation that is not the
    session's abort (as the in-process ``Turn.run``). Abort (``Agent.abort``) cancels the engine's
    call, which stops the turn where it runs and returns its end; the inputs its turn took as
    steering are answered with its outcome, the others run as the next turn."""
    if item in queue:
        queue.remove(item)  # the engine records it: a failure below is told to whoever sent it
    if item.images:
        return _failed(agent, session, NO_IMAGES)
    steps = await live_steps(agent, session)
    try:
        outcome = await engine(steps, item.text, agent.config)
        if not isinstance(outcome, TurnOutcome):
            raise CrabError(f"the turn engine returned {type(outcome).__name__}, not a crab.steps.TurnOutcome")
    except asyncio.CancelledError:
        if not session.abort_requested:
            raise
        outcome = TurnOutcome(stop="aborted", session_id=session.id)
    except Exception as exc:
        error = str(exc) if isinstance(exc, CrabError) else f"internal error: {type(exc).__name__}: {exc}"
        outcome = _failed(agent, session, error)
    finally:
        await live_steps(agent, session)  # what the engine's turn stored, for the commands that follow
    for steered in steps.steered:
        if not steered.outcome.done():
            steered.outcome.set_result(replace(outcome, error=None, tool_calls=0))
    return outcome


async def live_steps(agent: Agent, session: Session) -> TurnSteps:
    """``session`` (the live one a channel keeps: its questions and steering) read again from the
    store, where the engine's turns record what happens, as a ``TurnSteps`` for the engine."""
    entries = await agent.store.entries(session.id, since_handoff=True)
    history = load_history(entries)
    session.messages = history.messages
    session.handoff = dict(history.handoff) if history.handoff else None
    return TurnSteps(agent, session, entries, history.missing)


def _failed(agent: Agent, session: Session, error: str) -> TurnOutcome:
    """The end of a turn the engine could not run: shown as an in-process turn's failure."""
    agent.emit(ErrorEvent(error, "unknown"), session.id)
    agent.emit(TurnEnded(session.id, "", "error", "", None, error), session.id)
    return TurnOutcome(stop="error", error=error, session_id=session.id)
