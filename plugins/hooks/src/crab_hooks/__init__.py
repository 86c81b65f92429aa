"""crab-hooks: commands the user configures run before and after tool calls, on prompts, at turn
ends and session starts, in Claude Code's hooks format (``.claude/settings.json``) or crab's own
``[plugins.hooks] events``.

Hook implementations only; the work is in ``crab_hooks.runtime`` and the modules it uses. The entry
point is the class: crab makes one object per plugin host, which keeps the hooks loaded at start-up.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import crab

if TYPE_CHECKING:
    from crab import AgentHandle, ConfigTable, Tool, ToolContext, ToolResult
    from crab.hooks import Deny, Replace
    from crab.messages import ToolCall

    from crab_hooks.runtime import Hooks

CRAB_API = ">=0.1,<0.2"


class HooksPlugin:
    """The ``hooks`` plugin: one per host."""

    CRAB_API = CRAB_API

    def __init__(self) -> None:
        self._hooks: Hooks | None = None

    @property
    def hooks(self) -> Hooks:
        if self._hooks is None:
            from crab_hooks.runtime import Hooks

            self._hooks = Hooks()
        return self._hooks

    @crab.hookimpl
    def crab_config_table(self) -> ConfigTable:
        """``[plugins.hooks]``: see ``crab_hooks.settings.TABLE``."""
        from crab_hooks.settings import TABLE

        return TABLE

    @crab.hookimpl
    def crab_startup(self, agent: AgentHandle) -> None:
        """Load the hooks of this run (crab's table, Claude Code's files, the project's if trusted)."""
        self.hooks.start(agent)

    @crab.hookimpl
    async def crab_before_tool_call(self, call: ToolCall, tool: Tool, ctx: ToolContext) -> Deny | Replace | None:
        """``PreToolUse``: exit 2 or a ``deny`` refuses the call, ``updatedInput`` replaces its arguments."""
        return await self.hooks.before_tool(call, tool, ctx)

    @crab.hookimpl
    async def crab_after_tool_call(
        self, call: ToolCall, tool: Tool, result: ToolResult, ctx: ToolContext
    ) -> ToolResult | None:
        """``PostToolUse``: the hooks' feedback (exit 2, ``block``, ``additionalContext``) joins the result."""
        return await self.hooks.after_tool(call, tool, result, ctx)

    @crab.hookimpl
    async def crab_prompt_submit(self, prompt: str, session_id: str, workspace: Path) -> Deny | str | None:
        """``SessionStart`` (first prompt of a session in this run), then ``UserPromptSubmit``."""
        return await self.hooks.prompt(prompt, session_id, workspace)

    @crab.hookimpl
    async def crab_turn_end(self, session_id: str, workspace: Path, text: str, continued: int) -> str | None:
        """``Stop``: exit 2 or ``block`` keeps the turn going with the hook's reason."""
        return await self.hooks.turn_end(session_id, workspace, text, continued)
