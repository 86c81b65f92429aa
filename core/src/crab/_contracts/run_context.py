"""``crab.RunContext``: what a function tool of a library run receives when its first parameter is
annotated ``crab.RunContext[Deps]`` (the run's ``deps=``, its session, usage so far, workspace), and
the per-session slot the library facade fills for it (``RunState`` in ``ToolContext.state``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from crab._contracts.messages import Usage

if TYPE_CHECKING:
    from crab._contracts.tools import ToolContext

DepsT = TypeVar("DepsT")

RUN_STATE = "crab.run"
"""The key of the running library run's ``RunState`` in the session's ``ToolContext.state``."""


@dataclass
class RunState:
    """What the library run in progress lends its tools: ``deps`` and its usage so far."""

    deps: Any = None
    usage: Callable[[], Usage] = field(default=Usage)


@dataclass(frozen=True, slots=True)
class RunContext(Generic[DepsT]):
    """The run a tool call belongs to: ``deps`` (what ``run(..., deps=)`` was given; None outside a
    library run), ``usage`` the run spent before this call, and the call's ``tool`` context
    (``session_id``, ``workspace``, ``ask``, ``question``…)."""

    deps: DepsT
    usage: Usage
    tool: ToolContext

    @property
    def session_id(self) -> str:
        return self.tool.session_id

    @property
    def workspace(self) -> Path:
        return self.tool.workspace


def run_context(ctx: ToolContext) -> RunContext[Any]:
    """The ``RunContext`` of a call made with ``ctx``."""
    state = ctx.state.get(RUN_STATE)
    if isinstance(state, RunState):
        return RunContext(state.deps, state.usage(), ctx)
    return RunContext(None, Usage(), ctx)
