"""The permission gate: reads pass; writes, exec and network ask the user once, always, or not; in
plan mode writes and exec are refused until the user approves a plan. A seatbelt against a confused
model, not a security boundary (docs/security.md)."""

from __future__ import annotations

import json
import re
from typing import Any

from crab._contracts.interception import Allow, Decision, Deny, PermissionRequest
from crab._contracts.messages import ToolCall
from crab._contracts.tools import Tool, ToolContext
from crab._host.hookspecs import hookimpl

ALWAYS_KEY = "crab.permissions.always"

PLAN_KEY = "crab.permissions.plan"
"""``ToolContext.state`` key of a session's plan mode: True in plan mode, False out of it, absent
where the configured mode decides (``plan``: in it). A plugin's code sets it (crab-plan's ``/plan``
and plan approval); a model cannot, as no tool argument reaches a session's state."""

PLAN_REFUSED = (
    "Refused: {tool} needs {permission} permission and this session is in plan mode: only tools that "
    "read run until the user approves a plan. Keep exploring with read tools and present your plan "
    "for the user's approval: plan mode ends when the user approves your plan or leaves it."
)

NOBODY_ANSWERED = (
    "Refused: {tool} needs {permission} permission and nobody answered the question about this call, "
    "so nothing was allowed. Tell the user what you wanted to do; they can allow it when they are there."
)
"""The refusal when the asker raised ``TimeoutError`` (nobody there to answer), which the model
must not read as the user's no."""

_PADDING = re.compile(r"\s{3,}")


def summarize(call: ToolCall, limit: int = 400) -> str:
    """``name(arg=value, …)`` for the question shown to the user, at most about ``limit`` characters.

    A model could pad a command so that what it really does falls past the cut: runs of
    whitespace are shown as ``⟨N spaces⟩``, and a long call keeps its head *and* its tail with
    the number of characters left out between them, so the end of a command is always seen.
    """
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
    text = _PADDING.sub(lambda m: f" ⟨{len(m.group())} spaces⟩ ", f"{call.name}({args})")
    if len(text) <= limit:
        return text
    keep = (limit - 40) // 2
    hidden = len(text) - 2 * keep
    return f"{text[:keep]} …⟨{hidden} characters not shown⟩… {text[-keep:]}"


def in_plan_mode(mode: str, state: dict[str, Any]) -> bool:
    """Whether a session whose scratch is ``state`` is in plan mode under the configured ``mode``."""
    switched = state.get(PLAN_KEY)
    return switched if isinstance(switched, bool) else mode == "plan"


async def decide(mode: str, call: ToolCall, tool: Tool, ctx: ToolContext) -> Decision:
    """The gate's decision for one call (see the module docstring)."""
    permission = tool.permission
    if permission in ("write", "exec") and in_plan_mode(mode, ctx.state):
        return Deny(PLAN_REFUSED.format(tool=tool.name, permission=permission))
    if mode == "plan":
        mode = "ask"  # out of plan mode, or a call plan mode lets pass (network): asked as before
    if permission == "read" or mode == "yolo":
        return Allow()
    if mode == "read-only" and permission in ("write", "exec"):
        return Deny(
            f"Refused: {tool.name} needs {permission} permission and crab runs read-only "
            "(--read-only). Tell the user what you would change instead."
        )
    always: set[str] = ctx.state.setdefault(ALWAYS_KEY, set())
    if permission in always:
        return Allow()
    if ctx.ask is None:
        return Deny(
            f"Refused: {tool.name} needs {permission} permission and this run cannot ask the user. "
            'The user can allow it with --yolo (or [crab] permissions = "yolo"), or run `crab chat` to answer.'
        )
    from crab._loop.tool_exec import preview_diffs  # only once a call needs asking: start-up stays small

    diffs = await preview_diffs(tool, call.arguments, ctx)
    try:
        answer = await ctx.ask(PermissionRequest(tool.name, permission, summarize(call), diffs, call.id))
    except TimeoutError:  # the asker's way of saying nobody answered: not the user's refusal
        return Deny(NOBODY_ANSWERED.format(tool=tool.name, permission=permission))
    if answer == "always":
        always.add(permission)
        return Allow()
    if answer == "once":
        return Allow()
    return Deny(f"The user refused this {permission} call ({tool.name}). Ask them how to proceed.")


class PermissionGate:
    """Core's built-in ``crab_before_tool_call``; runs last so it sees the final arguments.

    ``mode`` is ``ask`` (default), ``yolo`` (allow everything), ``read-only`` (refuse write and
    exec) or ``plan`` (``ask`` once the user approved a plan, refusing write and exec before). A
    session's own plan switch (``PLAN_KEY`` in its state) wins over the mode, so ``/plan`` puts an
    ``ask`` or ``yolo`` session in plan mode and approval takes it back to the mode it had. Where
    nobody can answer (a non-interactive run) it refuses. A question carries the diffs
    the call would make when its tool can preview them (``Tool.preview``).
    """

    def __init__(self, mode: str) -> None:
        self.mode = mode

    @hookimpl(trylast=True)
    def crab_before_tool_call(self, call: ToolCall, tool: Tool, ctx: ToolContext) -> Any:
        return decide(self.mode, call, tool, ctx)
