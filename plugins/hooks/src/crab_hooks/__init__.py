"""crab-hooks: commands and HTTP endpoints the user configures run before and after tool calls, on
prompts, at turn ends, session starts and ends, subagent starts and stops, compactions and
crab-worktree's worktrees (``WorktreeCreate``, ``WorktreeRemove``), in Claude Code's hooks format
(``.claude/settings.json``) or crab's own ``[plugins.hooks] events``.

Hook implementations only; the work is in ``crab_hooks.runtime`` and the modules it uses. The entry
point is the class: crab makes one object per plugin host, which keeps the hooks loaded at start-up.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import crab

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from crab import AgentHandle, Config, ConfigTable, PermissionRequest, Tool, ToolContext, ToolResult
    from crab.events import Event
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
    def crab_before_tool_call(
        self, call: ToolCall, tool: Tool, ctx: ToolContext
    ) -> Awaitable[Deny | Replace | None] | None:
        """``PreToolUse``: exit 2 or a ``deny`` refuses the call, ``updatedInput`` replaces its arguments.

        A plain function answering None at once where no hook command runs on tool calls (most
        runs): a call costs no coroutine to make and await (``bench/loop.py --plugins installed``)."""
        hooks = self.hooks
        return hooks.before_tool(call, tool, ctx) if hooks.wants_tool_calls("PreToolUse") else None

    @crab.hookimpl
    async def crab_permission_request(self, request: PermissionRequest, session_id: str, workspace: Path) -> str | None:
        """``PermissionRequest`` (deny, or the user's own allow), else ``Notification`` (permission_prompt)."""
        return await self.hooks.permission(request, session_id, workspace)

    @crab.hookimpl
    def crab_after_tool_call(
        self, call: ToolCall, tool: Tool, result: ToolResult, ctx: ToolContext
    ) -> Awaitable[ToolResult | None] | None:
        """``PostToolUse`` (``PostToolUseFailure`` for a failed call): the hooks' feedback joins the
        result (None at once when there is none to run or add, as ``crab_before_tool_call``)."""
        hooks = self.hooks
        return hooks.after_tool(call, tool, result, ctx) if hooks.wants_tool_calls("PostToolUse") else None

    @crab.hookimpl
    async def crab_prompt_submit(
        self, prompt: str, session_id: str, workspace: Path, config: Config | None
    ) -> Deny | str | None:
        """``SessionStart`` and ``InstructionsLoaded`` (first prompt of a session in this run), then
        ``UserPromptSubmit``; ``SubagentStart`` in a child's turn (no ``config``)."""
        return await self.hooks.prompt(prompt, session_id, workspace, child=config is None)

    @crab.hookimpl
    async def crab_turn_end(self, session_id: str, workspace: Path, text: str, continued: int) -> str | None:
        """``Stop`` (``SubagentStop`` in a child session): exit 2 or ``block`` keeps the turn going."""
        return await self.hooks.turn_end(session_id, workspace, text, continued)

    @crab.hookimpl
    def crab_event(self, event: Event, session_id: str) -> None:
        """``PreCompact``, ``PostCompact``, ``StopFailure``: started in the background."""
        if self._hooks is not None:
            self._hooks.observe(event, session_id)

    @crab.hookimpl
    async def crab_session_end(self, agent: AgentHandle, session_id: str, reason: str) -> None:
        """``SessionEnd`` (reason ``other``)."""
        await self.hooks.session_end(session_id, agent.workspace, reason)

    @crab.hookimpl
    def crab_worktree_hooks(self, config: Config) -> list[Any]:
        """``WorktreeCreate`` and ``WorktreeRemove`` on crab-worktree's worktrees (the hook it declares)."""
        from crab_hooks.worktrees import WorktreeEvents

        return [WorktreeEvents(self.hooks)]

    @crab.hookimpl
    async def crab_shutdown(self) -> None:
        """Let the hooks still running in the background finish (each within its timeout)."""
        if self._hooks is not None:
            await self._hooks.settle()
