"""crab-plan: plan mode — ``/plan``, the ``present_plan`` tool and the user's approval.

Hook implementations only; the switch is in ``crab_plan.switch`` (each session's plan mode, from
the stored history) and the tool in ``crab_plan.present``. Core's permission gate does the
refusing (``[crab] permissions = "plan"`` and a session's switch in its state): this plugin says
when a session is in plan mode and ends it with the user's word. The entry point is the class:
crab makes one object per plugin host, which keeps the switches of that run's sessions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import crab

if TYPE_CHECKING:
    from crab_plan.switch import PlanSwitch

CRAB_API = ">=0.1,<0.2"


class PlanModePlugin:
    """The ``plan`` plugin: one per host."""

    CRAB_API = CRAB_API

    def __init__(self) -> None:
        self._switch: PlanSwitch | None = None

    @property
    def switch(self) -> PlanSwitch:
        if self._switch is None:
            from crab_plan.switch import PlanSwitch

            self._switch = PlanSwitch()
        return self._switch

    @crab.hookimpl
    def crab_config_table(self) -> crab.ConfigTable:
        from crab_plan.present import TABLE

        return TABLE

    @crab.hookimpl
    def crab_tools(self, config: crab.Config) -> list[crab.Tool]:
        """``present_plan``: always offered, in plan mode or not, so the tools array (part of the
        prompt-cache prefix) stays the same when a session enters or leaves plan mode."""
        from crab_plan.present import PresentPlan

        return [PresentPlan(self.switch).tool()]

    @crab.hookimpl
    def crab_commands(self, config: crab.Config) -> list[crab.Command]:
        from crab_plan.command import plan_command

        return [
            crab.Command(
                "plan",
                "plan mode: read tools only until you approve the model's plan",
                lambda ctx, args: plan_command(self.switch, ctx, args),
                usage="[on|off|status]",
            )
        ]

    @crab.hookimpl
    def crab_startup(self, agent: crab.AgentHandle) -> None:
        self.switch.handle = agent

    @crab.hookimpl
    async def crab_prompt_submit(self, session_id: str) -> str | None:
        """Tell the model where plan mode stands, as a note recorded after the prompt (never in
        the system prompt: that would change the cached prefix)."""
        return await self.switch.note_for(session_id)

    @crab.hookimpl(tryfirst=True)
    async def crab_before_tool_call(self, ctx: crab.ToolContext) -> None:
        """Put the session's plan mode in its state, where the permission gate (last) reads it."""
        await self.switch.sync(ctx)
