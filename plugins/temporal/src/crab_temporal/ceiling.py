"""A turn's permission ceiling on the worker: the client's mode (``crab run --read-only``, ``[crab]
permissions``, a scheduled job's mode) travels in the workflow's argument to each ``crab.run_tool``
activity, and the call is held to the NARROWER of it and the worker's own mode (read-only < plan <
ask < yolo, as core's gate orders them), never the wider: a client asking ``yolo`` of an ``ask``
worker still gets its questions. Only narrowing happens here; the worker's own gate runs after."""

from __future__ import annotations

from contextvars import ContextVar

import crab
import crab.messages

ORDER = {"read-only": 0, "plan": 1, "ask": 2, "yolo": 3}
CEILING: ContextVar[str | None] = ContextVar("crab_temporal_ceiling", default=None)
"""The ceiling of the tool call the ``crab.run_tool`` activity is running (None: no ceiling)."""

_AGENTS: dict[int, crab.AgentHandle] = {}
"""The started agents of this process, by their config's id (what a turn engine is handed)."""


def started(agent: crab.AgentHandle) -> None:
    _AGENTS[id(agent.config)] = agent


def stopped(agent: crab.AgentHandle) -> None:
    _AGENTS.pop(id(agent.config), None)


def held(config: crab.Config, session_id: str) -> str | None:
    """The narrowest mode the plugins' ``crab_turn_ceilings`` hold ``session_id``'s turn to, or
    None. A function that raises or answers what no mode is holds it read-only (fail closed)."""
    agent = _AGENTS.get(id(config))
    if agent is None:
        return None
    found: str | None = None
    for _plugin, function in agent.collect("crab_turn_ceilings"):
        try:
            answer = function(session_id) if callable(function) else None
        except Exception:
            answer = "read-only"
        if answer is not None:
            found = mode(answer) if found is None else narrower(found, answer)
    return found


def mode(value: object) -> str:
    """A mode as the gate knows it; anything else is the narrowest, never the widest."""
    return value if isinstance(value, str) and value in ORDER else "read-only"


def narrower(first: str, second: str) -> str:
    return min(mode(first), mode(second), key=ORDER.__getitem__)


async def decide(call: crab.messages.ToolCall, tool: crab.Tool, ctx: crab.ToolContext) -> crab.hooks.Decision | None:
    """None (the worker's gate decides) or core's gate's own refusal where the turn's ceiling is
    narrower than the worker's mode (``crab.hooks.permission_decision`` for the ceiling: the same
    words, questions and "always" as in one process). A ceiling that asks on a ``yolo`` worker asks
    the turn's client here, as the worker's gate would not; on a worker that asks itself, only the
    ceiling's refusals are taken here, so nobody is asked twice."""
    ceiling = CEILING.get()
    worker = mode(ctx.config.get("crab.permissions", "ask") if ctx.config is not None else "ask")
    if ceiling is None or tool.permission == "read" or ORDER[mode(ceiling)] >= ORDER[worker]:
        return None
    ceiling = mode(ceiling)
    refused_here = ceiling in ("read-only", "plan") and tool.permission in ("write", "exec")
    if worker != "yolo" and not refused_here:
        return None  # the worker's gate asks (ask or plan mode) or refuses (read-only) itself
    decision = await crab.hooks.permission_decision(ceiling, call, tool, ctx)
    return None if isinstance(decision, crab.hooks.Allow) else decision
