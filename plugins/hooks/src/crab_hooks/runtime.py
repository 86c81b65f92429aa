"""The hooks of one run, asked at each event: the hook implementations in ``crab_hooks`` call here.

Each event runs the matching commands at once (as Claude Code does), reads each run
(``crab_hooks.answers``) and turns the answers into what the crab hook returns: a ``Deny`` or
``Replace`` before a tool call, a result with the hooks' feedback after it, a refused prompt or
context for it, and text that keeps a turn going. A block wins over everything else, the first in
configuration order over later ones. Every line for the user goes through ``AgentHandle.notice``,
so it is redacted like every other event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crab import AgentHandle, Tool, ToolContext, ToolResult
from crab.hooks import Deny, Replace
from crab.messages import ToolCall

from crab_hooks import names
from crab_hooks.answers import Answer, read
from crab_hooks.runner import run_hook
from crab_hooks.sources import HookSet, load

PERMISSION_MODES = {"ask": "default", "yolo": "bypassPermissions", "read-only": "plan"}
"""crab's ``[crab] permissions`` as Claude Code's ``permission_mode`` names it."""


class Hooks:
    """The hook commands of one agent (loaded at start-up) and the events they run on."""

    def __init__(self) -> None:
        self.handle: AgentHandle | None = None
        self.hooks = HookSet()
        self.permission_mode = "default"
        self._tool_context: dict[str, list[str]] = {}  # call id -> PreToolUse context for its result
        self._started: set[str] = set()  # sessions whose SessionStart hooks ran in this run
        self._start_context: dict[str, str] = {}  # SessionStart context not yet recorded

    def start(self, handle: AgentHandle) -> None:
        self.handle = handle
        config = handle.config
        self.hooks = load(handle.workspace, config, config.plugin_settings("hooks"))
        self.permission_mode = PERMISSION_MODES.get(str(config.get("crab.permissions", "ask")), "default")
        for line in self.hooks.notices:
            handle.notice(line, "warning")

    def _notice(self, line: str) -> None:
        if self.handle is not None:
            self.handle.notice(line, "warning")

    def _event(self, name: str, session_id: str, cwd: Path, **fields: Any) -> dict[str, Any]:
        """The JSON every hook gets on stdin; crab keeps no transcript file, so that path is null."""
        return {
            "session_id": session_id,
            "transcript_path": None,
            "cwd": str(cwd),
            "permission_mode": self.permission_mode,
            "hook_event_name": name,
            **fields,
        }

    async def _ask(self, event: str, matched: Sequence[str], payload: dict[str, Any], cwd: Path) -> list[Answer]:
        commands = self.hooks.commands(event, matched)
        if not commands:
            return []
        runs = await asyncio.gather(*(run_hook(command, payload, cwd) for command in commands))
        answers = [read(run, event) for run in runs]
        for answer in answers:
            if answer.notice:
                self._notice(answer.notice)
        return answers

    # --- tool calls --------------------------------------------------------------------------

    async def before_tool(self, call: ToolCall, tool: Tool, ctx: ToolContext) -> Deny | Replace | None:
        if not self.hooks.groups.get("PreToolUse"):
            return None
        workspace = ctx.workspace
        name, tool_input = names.to_claude(call.name, call.arguments, workspace)
        payload = self._event(
            "PreToolUse", ctx.session_id, workspace, tool_name=name, tool_input=tool_input, tool_use_id=call.id
        )
        answers = await self._ask("PreToolUse", (name, call.name), payload, workspace)
        for answer in answers:
            if answer.block is not None:
                return Deny(answer.block, end_turn=answer.stop)
        context = [a.context for a in answers if a.context]
        if context:
            self._tool_context[call.id] = context
        updated = next((a.updated_input for a in answers if a.updated_input is not None), None)
        if updated is None:
            return None
        return Replace(names.from_claude(call.name, updated, workspace))

    async def after_tool(self, call: ToolCall, tool: Tool, result: ToolResult, ctx: ToolContext) -> ToolResult | None:
        notes = [("PreToolUse", text) for text in self._tool_context.pop(call.id, [])]
        if self.hooks.groups.get("PostToolUse"):
            workspace = ctx.workspace
            name, tool_input = names.to_claude(call.name, call.arguments, workspace)
            payload = self._event(
                "PostToolUse",
                ctx.session_id,
                workspace,
                tool_name=name,
                tool_input=tool_input,
                tool_response=_response(name, tool_input, result),
                tool_use_id=call.id,
            )
            for answer in await self._ask("PostToolUse", (name, call.name), payload, workspace):
                notes.extend(("PostToolUse", text) for text in (answer.block, answer.context) if text)
        if not notes:
            return None
        added = "\n\n".join(f"[{event} hook] {text}" for event, text in notes)
        return ToolResult(f"{result.content}\n\n{added}", result.is_error, result.details)

    # --- prompts, turn ends, session starts --------------------------------------------------

    async def prompt(self, prompt: str, session_id: str, workspace: Path) -> Deny | str | None:
        context: list[str] = []
        if session_id not in self._started:
            self._started.add(session_id)
            started = await self._session_start(session_id, workspace)
            if started:
                self._start_context[session_id] = started
        if self.hooks.groups.get("UserPromptSubmit"):
            payload = self._event("UserPromptSubmit", session_id, workspace, prompt=prompt)
            for answer in await self._ask("UserPromptSubmit", (), payload, workspace):
                if answer.block is not None:
                    return Deny(answer.block)
                if answer.context:
                    context.append(answer.context)
        started = self._start_context.pop(session_id, None)  # kept for the next prompt if refused
        return "\n\n".join([started, *context] if started else context) or None

    async def _session_start(self, session_id: str, workspace: Path) -> str | None:
        if not self.hooks.groups.get("SessionStart"):
            return None
        source = "startup"
        if self.handle is not None:
            try:
                info = await self.handle.session_info(session_id)
            except Exception:  # a store that cannot say: a hook must not refuse every prompt for it
                info = None
            source = "resume" if info is not None and info.entry_count else "startup"
        payload = self._event("SessionStart", session_id, workspace, source=source)
        answers = await self._ask("SessionStart", (source,), payload, workspace)
        return "\n\n".join(a.context for a in answers if a.context) or None

    async def turn_end(self, session_id: str, workspace: Path, text: str, continued: int) -> str | None:
        if not self.hooks.groups.get("Stop"):
            return None
        payload = self._event("Stop", session_id, workspace, stop_hook_active=continued > 0)
        answers = await self._ask("Stop", (), payload, workspace)
        if any(a.stop for a in answers):
            return None  # continue: false ends the turn whatever else was said
        reasons = [a.block for a in answers if a.block]
        return "\n\n".join(reasons) or None


def _response(name: str, tool_input: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    """``tool_response`` as far as crab knows it: the text the model gets, whether it failed, and
    the fields Claude Code's scripts read most (``stdout`` of Bash, ``filePath`` of file tools)."""
    response: dict[str, Any] = {"content": result.content, "is_error": result.is_error, "success": not result.is_error}
    if name == "Bash":
        response.update(stdout=result.content, stderr="", interrupted=False, isImage=False)
    if "file_path" in tool_input:
        response["filePath"] = tool_input["file_path"]
    return response
