"""Each session's plan: set by the ``todo`` tool (and shown as a ``crab.PlanEvent``), read back
from the session's stored entries when this process has not seen it (a resumed session), and
given to the model, unchanged for the whole context, once a compaction started the context afresh.
The store is the truth: the caches here only save reading it again."""

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
        self.plans: dict[str, tuple[crab.PlanItem, ...]] = {}
        self.notes: dict[str, tuple[str, str]] = {}
        """Per session: the system prompt of its current context, and the plan note that goes with it."""

    async def plan_for(self, session_id: str) -> tuple[crab.PlanItem, ...]:
        """The session's plan: from this process, else from its stored entries."""
        if session_id not in self.plans:
            if self.handle is None:
                return ()
            self.plans[session_id] = plan.from_entries(await self.handle.entries(session_id))
        return self.plans[session_id]

    async def run(self, arguments: dict[str, Any], ctx: crab.ToolContext) -> crab.ToolResult:
        items = plan.checked(arguments, int(ctx.settings.get("max_items", 20)), int(ctx.settings.get("max_chars", 200)))
        self.plans[ctx.session_id] = items
        ctx.emit(crab.PlanEvent(ctx.session_id, items))
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
        the session's context started afresh (a compaction's handoff) after a plan was set; None
        (unchanged) otherwise.

        The note is the plan as it stood at that handoff, so it stays the same for every request
        of that context: the system prompt is part of the prefix providers cache, and a note that
        came and went with the model's ``todo`` calls would re-bill the whole prompt each time. A
        ``todo`` call made since is in the messages, after the note, and supersedes it."""
        if not session_id or not any(spec.name == plan.NAME for spec in request.tools):
            return None
        try:
            shown = await self.context_note(session_id, request.system)
        except Exception:  # a hook that raises refuses the model call: the plan is an aid, not worth that
            return None
        return replace(request, system=f"{request.system}\n\n{shown}") if shown else None

    async def context_note(self, session_id: str, system: str) -> str:
        """The note for the session's current context ("" for none), read from the store once
        per context: a compaction changes ``system`` (its summary rides there), which is when the
        note is read again."""
        known = self.notes.get(session_id)
        if known is not None and known[0] == system:
            return known[1]
        entries = await self.handle.entries(session_id) if self.handle is not None else []
        handoff = plan.last_handoff(entries)
        items = plan.from_entries(entries[:handoff]) if handoff is not None else ()
        shown = plan.note(items) if items else ""
        self.notes[session_id] = (system, shown)
        return shown

    async def command(self, ctx: crab.CommandContext, args: str) -> crab.CommandResult:
        """``/todo``: the checklist of this session."""
        items = await self.plan_for(ctx.session.id)
        if not items:
            return crab.CommandResult("no plan yet: the model keeps one with the todo tool on multi-step tasks")
        return crab.CommandResult("\n".join([f"plan ({plan.summary(items)}):", *plan.lines(items)]))
