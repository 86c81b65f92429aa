"""``/plan [on|off]``: put the session in plan mode, take it out, or say where it stands."""

from __future__ import annotations

import crab

from crab_plan.switch import PlanSwitch

USAGE = "usage: /plan [on|off|status] (on: read tools only until you approve the model's plan)"


async def plan_command(switch: PlanSwitch, ctx: crab.CommandContext, args: str) -> crab.CommandResult:
    word = args.strip().casefold() or "on"
    if word not in ("on", "off", "status"):
        return crab.CommandResult(USAGE, is_error=True)
    on = await switch.is_on(ctx.session.id)
    if word == "status":
        return crab.CommandResult("plan mode is on" if on else "plan mode is off")
    if word == "on":
        if on:
            return crab.CommandResult("plan mode is on already: the model presents its plan for your approval")
        switch.set(ctx.session.id, True, note=True)
        return crab.CommandResult(
            "plan mode on: the model reads but changes nothing until you approve its plan (/plan off leaves)"
        )
    if not on:
        return crab.CommandResult("plan mode is off already")
    switch.set(ctx.session.id, False, note=True)
    return crab.CommandResult("plan mode off: tools run with the session's usual permissions again")
