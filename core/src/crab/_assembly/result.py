"""What a library run ends with (``crab.RunResult``), gathered from the events the run emitted (a
run may take several turns): calls paired with results, every priced ``UsageEvent``, the last ``TurnEnded``."""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic

from crab._contracts.events import ChildEvent, Event, ToolCallEvent, ToolResultEvent, TurnEnded, TurnStop, UsageEvent
from crab._contracts.messages import Message, Usage

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    from crab._loop.session import TurnOutcome

    OutputT = TypeVar("OutputT", default=str)
    """What a run's ``output`` is: ``output_type``'s type, ``str`` (the text) for an untyped run."""
else:  # PEP 696 defaults reach typing.TypeVar in 3.13; type checkers read typing_extensions' above
    OutputT = typing.TypeVar("OutputT")


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call of a run and how it ended (``result`` is None if it never got one)."""

    id: str
    name: str
    arguments: Mapping[str, Any]
    result: str | None = None
    is_error: bool = False
    duration_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class RunResult(Generic[OutputT]):
    """How a run ended: the final answer, every tool call with its result, usage and cost.

    ``stop`` is the last turn's ``crab.events.TurnStop`` (``"end"`` for an answer, ``"aborted"``,
    ``"error"`` with ``error`` saying why, ``"guard"``, ``"max_iterations"``, ``"command"`` for a
    ``/command``); ``usage.cost`` is in US dollars when the model's prices are known. ``turns``
    counts the turns the run took (more than one with follow-ups). Pass ``session_id`` to a later
    run to continue the conversation.

    ``output`` is the answer as the run's ``output_type`` (validated; for an untyped run, the
    text); ``messages`` are the messages this run added to the session, in order (its prompt, the
    replies, the tool results), as ``crab.messages.messages_to_json`` writes them.
    """

    text: str
    stop: TurnStop
    session_id: str
    tool_calls: tuple[ToolCallRecord, ...] = ()
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    turns: int = 0
    output: OutputT = None  # type: ignore[assignment]  # always given by the run; None only when it failed
    messages: tuple[Message, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the run ended with an answer (at the iteration cap too) or a command that worked."""
        return self.error is None and self.stop in ("end", "max_iterations", "command")


class ResultCollector:
    """Listens to one run's events and builds its ``RunResult`` at the end."""

    def __init__(self) -> None:
        self.calls: dict[str, ToolCallRecord] = {}
        self.usage = Usage()
        self.ended: list[TurnEnded] = []

    def handle(self, event: Event) -> None:
        if isinstance(event, ToolCallEvent):
            call = event.call
            self.calls[call.id] = ToolCallRecord(call.id, call.name, dict(call.arguments))
        elif isinstance(event, ToolResultEvent):
            known = self.calls.get(event.call_id) or ToolCallRecord(event.call_id, event.name, {})
            self.calls[event.call_id] = ToolCallRecord(
                known.id, known.name, known.arguments, event.content, event.is_error, event.duration_ms
            )
        elif isinstance(event, UsageEvent):
            self.usage = self.usage + event.usage
        elif isinstance(event, ChildEvent):
            inner: Event = event.event
            while isinstance(inner, ChildEvent):
                inner = inner.event
            if isinstance(inner, UsageEvent):  # a child session's model call: the run paid for it
                self.usage = self.usage + inner.usage
        elif isinstance(event, TurnEnded):
            self.ended.append(event)

    def result(
        self, session_id: str, first: TurnOutcome, outcomes: list[TurnOutcome], redact: Callable[[str], str]
    ) -> RunResult[Any]:
        """The run's result: the last turn that ended decides text, stop and error (a command,
        which ends no turn, leaves ``first``, the outcome of the run's own input)."""
        final = first
        if self.ended:
            last = self.ended[-1].turn_id
            final = next((o for o in reversed(outcomes) if o.turn_id == last), first)
        text = redact(final.text)
        return RunResult(
            text=text,
            stop=final.stop,
            session_id=session_id,
            tool_calls=tuple(self.calls.values()),
            usage=self.usage,
            error=redact(final.error) if final.error is not None else None,
            turns=len(self.ended),
            output=text,
        )
