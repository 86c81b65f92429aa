"""The ``present_plan`` tool: the model's plan put to the user as a question through the session's
own channel, and what their answer means — approve (plan mode ends, the steps become the todo
list), leave plan mode, or words asking for changes (the turn goes on with them)."""

from __future__ import annotations

import asyncio
from typing import Any

import crab

from crab_plan.switch import APPROVED, LEFT, PLAN_KEY, TOOL, PlanSwitch

APPROVE = "Approve"
LEAVE = "Leave plan mode"
CHOICES = (APPROVE, LEAVE)
MAX_STEPS = 30
MAX_STEP_CHARS = 300
MAX_PLAN_CHARS = 8000
WAIT_CAP = 86_400.0
"""The tool's own timeout: ``[plugins.plan] timeout`` bounds the wait below it; this only keeps the
loop's default (``[crab] tool_timeout``, made for tools that work, not a person reading) from cutting it."""

TABLE = crab.ConfigTable(
    "plan",
    (
        crab.Setting(
            "timeout",
            "int",
            1800,
            "seconds present_plan waits for the user's answer before plan mode goes on without one",
            minimum=5,
            maximum=86_400,
        ),
    ),
    doc="crab-plan: plan mode (/plan, present_plan and the user's approval)",
)

DESCRIPTION = f"""In plan mode, present your finished plan to the user for approval. Call it once you have \
explored enough with read tools: `plan` says what you will change and why, `steps` are the steps in order \
(they become the todo list when the user approves). The user approves (plan mode ends: carry the plan \
out), asks for changes (revise and call {TOOL} again), or leaves plan mode (do not carry it out). Outside \
plan mode there is nothing to approve: do the work."""

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "plan": {"type": "string", "description": "The plan: what you will change, where, and why."},
        "steps": {
            "type": "array",
            "description": "The steps in order, a few words each.",
            "items": {"type": "string"},
        },
    },
    "required": ["plan", "steps"],
    "additionalProperties": False,
}


def checked(arguments: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """The plan's text and steps; ``crab.ToolError`` saying what to fix otherwise."""
    text = str(arguments.get("plan", "")).strip()
    raw = arguments.get("steps")
    if not text:
        raise crab.ToolError("present_plan needs `plan`: what you will change and why")
    if len(text) > MAX_PLAN_CHARS:
        raise crab.ToolError(f"the plan has {len(text)} characters; keep it to {MAX_PLAN_CHARS}")
    if not isinstance(raw, list) or not raw:
        raise crab.ToolError("present_plan needs `steps`: a list of the plan's steps, in order")
    if len(raw) > MAX_STEPS:
        raise crab.ToolError(f"{len(raw)} steps are too many; keep the plan to {MAX_STEPS} (merge some)")
    steps = tuple(" ".join(str(step).split()) for step in raw)
    for number, step in enumerate(steps, 1):
        if not step:
            raise crab.ToolError(f"step {number} has no text")
        if len(step) > MAX_STEP_CHARS:
            raise crab.ToolError(f"step {number} has {len(step)} characters; keep each to {MAX_STEP_CHARS}")
    return text, steps


def question(text: str, steps: tuple[str, ...]) -> crab.Question:
    numbered = "\n".join(f"  {n}. {step}" for n, step in enumerate(steps, 1))
    asked = f"The model's plan:\n\n{text}\n\nSteps:\n{numbered}\n\nApprove it, leave plan mode, or type what to change."
    return crab.Question(asked, CHOICES, free_text=True)


class PresentPlan:
    """The tool, on one plugin host's ``PlanSwitch``."""

    def __init__(self, switch: PlanSwitch) -> None:
        self.switch = switch

    async def run(self, arguments: dict[str, Any], ctx: crab.ToolContext) -> crab.ToolResult:
        text, steps = checked(arguments)
        if not await self.switch.in_state(ctx):
            raise crab.ToolError("this session is not in plan mode: there is nothing to approve; go on with the task")
        if ctx.question is None:
            return crab.ToolResult(
                "Nobody can approve a plan in this run (it cannot ask the user): plan mode stays on. "
                "End your turn now with the plan as your answer."
            )
        try:
            async with asyncio.timeout(float(ctx.settings.get("timeout", 1800))):
                answer = await ctx.question(question(text, steps))
        except TimeoutError:
            answer = None
        if answer is None:
            return crab.ToolResult(
                "The user gave no answer: plan mode stays on. End your turn; the user answers in their next message."
            )
        if answer == APPROVE:
            self.switch.set(ctx.session_id, False, note=False)
            ctx.state[PLAN_KEY] = False
            items = tuple(crab.events.PlanItem(step, "pending") for step in steps)
            ctx.emit(crab.events.PlanEvent(ctx.session_id, items))
            listed = "\n".join(f"[ ] {step}" for step in steps)
            return crab.ToolResult(
                f"{APPROVED} The user approved the plan. Plan mode is over: tools run with the session's usual "
                f"permissions again. The plan is your todo list now:\n{listed}\n"
                "Carry it out step by step, keeping the todo list current as you go.",
                details={"approved": True, "steps": list(steps)},
            )
        if answer == LEAVE:
            self.switch.set(ctx.session_id, False, note=False)
            ctx.state[PLAN_KEY] = False
            return crab.ToolResult(
                f"{LEFT} The user left plan mode without approving this plan. Do not carry it out: end your "
                "turn and wait for the user's next message.",
                details={"approved": False},
            )
        return crab.ToolResult(
            f"The user asks for changes to the plan (their words, quoted): {answer!r}\n"
            f"You are still in plan mode: revise the plan and present it again with {TOOL}.",
            details={"approved": False, "changes": answer},
        )

    def tool(self) -> crab.Tool:
        # read: presenting a plan changes nothing; the user's answer is what ends plan mode
        # alone in its reply: one question at a time, never beside a permission question
        return crab.Tool(TOOL, DESCRIPTION, PARAMETERS, self.run, permission="read", exclusive=True, timeout=WAIT_CAP)
