"""crab-todo: the ``todo`` tool (a checklist the model keeps for a session) and the ``/todo`` command.

Hook implementations only; the work is in ``crab_todo.plan`` (the checklist, read and checked)
and ``crab_todo.keeper`` (each session's plan, from the stored history). The entry point is the
class: crab makes one object per plugin host, which keeps the plans it has seen for that run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import crab

if TYPE_CHECKING:
    from crab_todo.keeper import PlanKeeper

CRAB_API = ">=0.1,<0.2"


class TodoPlugin:
    """The ``todo`` plugin: one per host."""

    CRAB_API = CRAB_API

    def __init__(self) -> None:
        self._keeper: PlanKeeper | None = None

    @property
    def keeper(self) -> PlanKeeper:
        if self._keeper is None:
            from crab_todo.keeper import PlanKeeper

            self._keeper = PlanKeeper()
        return self._keeper

    @crab.hookimpl
    def crab_config_table(self) -> crab.ConfigTable:
        from crab_todo.plan import TABLE

        return TABLE

    @crab.hookimpl
    def crab_tools(self, config: crab.Config) -> list[crab.Tool]:
        """``todo``: replace the session's checklist (read permission: it changes only the plan)."""
        return [self.keeper.tool()]

    @crab.hookimpl
    def crab_commands(self, config: crab.Config) -> list[crab.Command]:
        return [crab.Command("todo", "show the model's checklist for this session", self.keeper.command)]

    @crab.hookimpl
    def crab_startup(self, agent: crab.AgentHandle) -> None:
        """Keep the handle: a plan not seen in this process is read from the session's entries."""
        self.keeper.handle = agent

    @crab.hookimpl
    async def crab_before_model_call(self, request: crab.ModelRequest, session_id: str) -> crab.ModelRequest | None:
        """After a compaction (or a resume) took the last ``todo`` call out of the context, the
        plan goes with the request, so the model still sees it."""
        return await self.keeper.with_plan(request, session_id)

    @crab.hookimpl
    def crab_event(self, event: crab.events.Event, session_id: str) -> None:
        """A checklist another plugin set (crab-plan's approved plan, as a ``crab.events.PlanEvent``) is
        the session's plan too: ``/todo`` shows it and the model's next ``todo`` call replaces it."""
        if isinstance(event, crab.events.PlanEvent):
            self.keeper.plans[event.session_id] = event.items
