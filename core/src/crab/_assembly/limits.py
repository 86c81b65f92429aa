"""Usage limits of one library run (``crab.messages.UsageLimits``): what the run has spent, counted from its
events, and the first limit it crossed (``UsageLimitExceeded`` names it with the figures)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crab._contracts.errors import CrabError, UsageError
from crab._contracts.events import ChildEvent, Event, ToolCallEvent, UsageEvent
from crab._contracts.messages import Usage


@dataclass(frozen=True, slots=True)
class UsageLimits:
    """Most a run may spend; None: no limit. ``requests``: model calls; ``input_tokens`` and
    ``output_tokens`` summed over them; ``total_cost`` in US dollars (known prices only);
    ``tool_calls``: calls the model asked for."""

    requests: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_cost: float | None = None
    tool_calls: int | None = None

    def __post_init__(self) -> None:
        for name in ("requests", "input_tokens", "output_tokens", "total_cost", "tool_calls"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value < 0):
                raise UsageError(f"UsageLimits({name}=...) takes a number of at least 0, not {value!r}")


class UsageLimitExceeded(CrabError):
    """A run crossed one of its ``UsageLimits``: ``limit`` names it, ``value`` is what the run
    reached, ``maximum`` what was allowed. The turn was ended cleanly (every call has its result)
    and the session can be continued."""

    result: Any = None
    """The run's ``crab.RunResult`` (usage, messages, session id): nothing of the run is lost."""

    def __init__(self, limit: str, value: float, maximum: float) -> None:
        super().__init__(
            f"usage limit {limit} exceeded: the run reached {value:g}, the limit is {maximum:g} "
            f"(raise UsageLimits({limit}=...) to allow more)"
        )
        self.limit = limit
        self.value = value
        self.maximum = maximum


class LimitWatch:
    """Counts a run's model calls, tokens, cost and tool calls as its events pass, against ``limits``."""

    def __init__(self, limits: UsageLimits) -> None:
        self.limits = limits
        self.requests = 0
        self.tool_calls = 0
        self.usage = Usage()
        self.exceeded: UsageLimitExceeded | None = None

    def see(self, event: Event) -> bool:
        """Count ``event``; True when it made the run cross a limit (the first time). A child
        session's model calls (a subagent's) count in tokens and cost, as the run paid for them."""
        if isinstance(event, ChildEvent):
            inner: Event = event.event
            while isinstance(inner, ChildEvent):
                inner = inner.event
            if not isinstance(inner, UsageEvent):
                return False
            self.usage = self.usage + inner.usage
            return self._cross(self._over())
        if isinstance(event, UsageEvent):
            self.requests += 1
            self.usage = self.usage + event.usage
        elif isinstance(event, ToolCallEvent):
            self.tool_calls += 1
        else:
            return False
        return self._cross(self._over())

    def before_request(self) -> bool:
        """True when one more model call would cross ``requests`` (the run must stop before it)."""
        maximum = self.limits.requests
        if maximum is not None and self.requests >= maximum:
            return self._cross(UsageLimitExceeded("requests", self.requests + 1, maximum))
        return False

    def _over(self) -> UsageLimitExceeded | None:
        limits, usage = self.limits, self.usage
        figures: tuple[tuple[str, float | None, float | None], ...] = (
            ("requests", self.requests, limits.requests),
            ("input_tokens", usage.input_tokens, limits.input_tokens),
            ("output_tokens", usage.output_tokens, limits.output_tokens),
            ("total_cost", usage.cost, limits.total_cost),
            ("tool_calls", self.tool_calls, limits.tool_calls),
        )
        for name, value, maximum in figures:
            if value is not None and maximum is not None and value > maximum:
                return UsageLimitExceeded(name, value, maximum)
        return None

    def _cross(self, exceeded: UsageLimitExceeded | None) -> bool:
        if exceeded is None or self.exceeded is not None:
            return False
        self.exceeded = exceeded
        return True
