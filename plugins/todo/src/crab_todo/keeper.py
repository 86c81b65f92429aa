"""Each session's plan: set by the ``todo`` tool (and shown as a ``crab.events.PlanEvent``), read back
from the session's stored entries when this process has not seen it (a resumed session), and
given to the model, as it stood at the last compaction, with a request whose context no longer
holds the call that set it. The store is the truth: the caches here only save reading it again."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import crab

from crab_todo import plan

DESCRIPTION = """Keep a short checklist of the steps of a multi-step task, which the user sees \
(pending, in_progress, done). Each call replaces the whole list: send every step, each with its \
status. Make one when a task takes three or more steps; mark a step in_progress when you start it \
(one at a time) and done as soon as it is finished; add steps you discover; send an empty list \
to clear the plan when the task changes. Skip it for simple one-step requests."""


class PlanKeeper:
    """The plans of one plugin host's sessions (see the module)."""

    def __init__(self) -> None:
        self.handle: crab.AgentHandle | None = None
        self.plans: dict[str, tuple[crab.events.PlanItem, ...]] = {}
        self.anchored: dict[str, tuple[int, tuple[str, tuple[crab.events.PlanItem, ...]] | None]] = {}
        """Per session: the hash of the system prompt the note was decided for (not the prompt
        itself: a server keeps many sessions), and ``plan.before_anchor``."""

    async def plan_for(self, session_id: str) -> tuple[crab.events.PlanItem, ...]:
        """The session's plan: from this process, else from its stored entries."""
        if session_id not in self.plans:
            if self.handle is None:
                return ()
            self.plans[session_id] = plan.from_entries(await self.handle.entries(session_id))
        return self.plans[session_id]

    async def run(self, arguments: dict[str, Any], ctx: crab.ToolContext) -> crab.ToolResult:
        items = plan.checked(arguments, int(ctx.settings.get("max_items", 20)), int(ctx.settings.get("max_chars", 200)))
        self.plans[ctx.session_id] = items
        ctx.emit(crab.events.PlanEvent(ctx.session_id, items))
        if not items:
            return crab.ToolResult("Plan cleared.", details={"items": []})
        text = "\n".join([f"Plan updated ({plan.summary(items)}):", *plan.lines(items)])
        return crab.ToolResult(text, details={"items": [{"text": i.text, "status": i.status} for i in items]})

    def tool(self) -> crab.Tool:
        return crab.Tool(
            name=plan.NAME,
            description=DESCRIPTION,
            parameters={
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "description": "The whole checklist, in order (an empty list clears it).",
                        "items": {
                            "type": "object",
                            "properties": {
                                "text": {"type": "string", "description": "The step, in a few words."},
                                "status": {"type": "string", "enum": list(plan.STATUSES)},
                            },
                            "required": ["text", "status"],
                            "additionalProperties": False,
                        },
                    }
                },
                "required": ["items"],
                "additionalProperties": False,
            },
            handler=self.run,
            permission="read",
            timeout=10,
        )

    async def with_plan(self, request: crab.ModelRequest, session_id: str) -> crab.ModelRequest | None:
        """``request`` with the plan in its system prompt when the model is offered ``todo`` and
        its context no longer holds the call that set the plan it had when its context started
        afresh (a compaction or a handoff: ``plan.before_anchor``); None (unchanged) otherwise.

        The note is that plan, not the latest: a ``todo`` call after the compaction is in the
        context, and changing the note then would change the cached prefix (issue 38) on every
        plan update. The stored entries are read once per system prompt of a session (a
        compaction changes it)."""
        if not session_id or self.handle is None or not any(spec.name == plan.NAME for spec in request.tools):
            return None
        kept = self.anchored.get(session_id)
        if kept is None or kept[0] != hash(request.system):
            try:
                found = plan.before_anchor(await self.handle.entries(session_id))
            except Exception:  # a hook that raises refuses the model call: the plan is an aid, not worth that
                return None
            kept = self.anchored[session_id] = (hash(request.system), found)
        found = kept[1]
        if found is None or not found[1]:
            return None
        call_id, items = found
        if any(isinstance(m, crab.messages.ToolResultMessage) and m.call_id == call_id for m in request.messages):
            return None  # the call is in the context (kept verbatim): the model sees it there
        return replace(request, system=f"{request.system}\n\n{plan.note(items)}")

    async def command(self, ctx: crab.CommandContext, args: str) -> crab.CommandResult:
        """``/todo``: the checklist of this session."""
        items = await self.plan_for(ctx.session.id)
        if not items:
            return crab.CommandResult("no plan yet: the model keeps one with the todo tool on multi-step tasks")
        return crab.CommandResult("\n".join([f"plan ({plan.summary(items)}):", *plan.lines(items)]))
