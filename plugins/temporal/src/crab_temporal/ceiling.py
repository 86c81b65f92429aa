"""A turn's permission ceiling on the worker: the client's mode (``crab run --read-only``, ``[crab]
permissions``, a scheduled job's mode) travels in the workflow's argument to each ``crab.run_tool``
activity, and the call is held to the NARROWER of it and the worker's own mode (read-only < plan <
ask < yolo, as core's gate orders them), never the wider: a client asking ``yolo`` of an ``ask``
worker still gets its questions. Only narrowing happens here; the worker's own gate runs after."""

from __future__ import annotations

import json
import re
from contextvars import ContextVar

import crab
import crab.messages

ORDER = {"read-only": 0, "plan": 1, "ask": 2, "yolo": 3}
CEILING: ContextVar[str | None] = ContextVar("crab_temporal_ceiling", default=None)
"""The ceiling of the tool call the ``crab.run_tool`` activity is running (None: no ceiling)."""

# The gate's own words (crab's permission gate), so a refused call reads the same on a worker as in process.
READ_ONLY = (
    "Refused: {tool} needs {permission} permission and crab runs read-only "
    "(--read-only). Tell the user what you would change instead."
)
PLAN = (
    "Refused: {tool} needs {permission} permission and this session is in plan mode: only tools that "
    "read run until the user approves a plan. Keep exploring with read tools and present your plan "
    "for the user's approval: plan mode ends when the user approves your plan or leaves it."
)
NOBODY_ANSWERED = (
    "Refused: {tool} needs {permission} permission and nobody answered the question about this call, "
    "so nothing was allowed. Tell the user what you wanted to do; they can allow it when they are there."
)
CANNOT_ASK = (
    "Refused: {tool} needs {permission} permission and this run cannot ask the user. "
    'The user can allow it with --yolo (or [crab] permissions = "yolo"), or run `crab chat` to answer.'
)
SUMMARY_CHARS = 400
_PADDING = re.compile(r"\s{3,}")


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


def _summary(call: crab.messages.ToolCall) -> str:
    """``name(arguments)`` for the question, its head and its tail kept when long (what a padded
    command does at its end is still shown)."""
    text = f"{call.name}({json.dumps(call.arguments, ensure_ascii=False)})"
    text = _PADDING.sub(lambda m: f" ⟨{len(m.group())} spaces⟩ ", text)
    if len(text) <= SUMMARY_CHARS:
        return text
    keep = (SUMMARY_CHARS - 40) // 2
    return f"{text[:keep]} …⟨{len(text) - 2 * keep} characters not shown⟩… {text[-keep:]}"


async def decide(call: crab.messages.ToolCall, tool: crab.Tool, ctx: crab.ToolContext) -> crab.hooks.Decision | None:
    """None (the worker's gate decides) or a ``Deny`` where the turn's ceiling is narrower than the
    worker's mode. A ceiling that asks (``ask``, or a network call under ``read-only``/``plan``)
    on a ``yolo`` worker asks the turn's client here, as the worker's gate would not."""
    ceiling = CEILING.get()
    worker = mode(ctx.config.get("crab.permissions", "ask") if ctx.config is not None else "ask")
    if ceiling is None or tool.permission == "read" or ORDER[mode(ceiling)] >= ORDER[worker]:
        return None
    ceiling, permission = mode(ceiling), tool.permission
    if ceiling == "read-only" and permission in ("write", "exec"):
        return crab.hooks.Deny(READ_ONLY.format(tool=tool.name, permission=permission))
    if ceiling == "plan" and permission in ("write", "exec"):
        return crab.hooks.Deny(PLAN.format(tool=tool.name, permission=permission))
    if worker != "yolo":
        return None  # the worker's gate asks (ask or plan mode) or refuses (read-only) itself
    if ctx.ask is None:
        return crab.hooks.Deny(CANNOT_ASK.format(tool=tool.name, permission=permission))
    try:
        answer = await ctx.ask(crab.PermissionRequest(tool.name, permission, _summary(call), (), call.id))
    except TimeoutError:
        return crab.hooks.Deny(NOBODY_ANSWERED.format(tool=tool.name, permission=permission))
    if answer in ("once", "always"):
        return None
    return crab.hooks.Deny(f"The user refused this {permission} call ({tool.name}). Ask them how to proceed.")
