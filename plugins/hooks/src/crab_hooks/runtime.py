"""The hooks of one run, asked at each event: the hook implementations in ``crab_hooks`` call here.

Each event runs the matching commands at once (as Claude Code does), reads each run
(``crab_hooks.answers``) and turns the answers into what the crab hook returns: a ``Deny`` or
``Replace`` before a tool call, a result with the hooks' feedback after it, a refused prompt or
context for it, and text that keeps a turn going. A block wins over everything else, the first in
configuration order over later ones. Every line for the user goes through ``AgentHandle.notice``,
so it is redacted like every other event.

Events crab only observes (``crab_event``: a compaction, a turn that failed) and
``InstructionsLoaded`` run in the background, as their hooks cannot change what happens;
``crab_shutdown`` waits for them (each within its timeout).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

from crab import AgentHandle, PermissionRequest, Tool, ToolContext, ToolResult
from crab.config import crab_home
from crab.events import ChildEvent, CompactionEvent, ErrorEvent, Event, TurnEnded, TurnStarted
from crab.hooks import Deny, Replace
from crab.messages import ToolCall

from crab_hooks import conditions, names
from crab_hooks.answers import Answer, read
from crab_hooks.runner import run_hook
from crab_hooks.sources import HookCommand, HookSet, load

PERMISSION_MODES = {"ask": "default", "yolo": "bypassPermissions", "read-only": "plan", "plan": "plan"}
"""crab's ``[crab] permissions`` as Claude Code's ``permission_mode`` names it."""
SESSION_END_TIMEOUT = 1.5
"""Seconds a SessionEnd hook may run when it sets no ``timeout`` (Claude Code's default)."""
COMPACT_TRIGGERS = {"threshold": "auto", "overflow": "auto", "manual": "manual"}
"""crab's compaction reasons as Claude Code's ``trigger`` (and matcher) names them."""
STOP_ERRORS = {
    "rate_limit": "rate_limit",
    "overloaded": "server_error",
    "server": "server_error",
    "auth": "authentication_failed",
    "invalid_request": "invalid_request",
    "context_overflow": "invalid_request",
    "model_not_found": "invalid_request",
}
"""crab's error kinds as StopFailure's ``error`` (every other kind is ``unknown``)."""
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
MAX_CALLS_KEPT = 256
"""Calls whose Claude Code name and input are kept for a permission question that may follow."""


class Hooks:
    """The hook commands of one agent (loaded at start-up) and the events they run on."""

    def __init__(self) -> None:
        self.handle: AgentHandle | None = None
        self.hooks = HookSet()
        self.permission_mode = "default"
        self._tool_context: dict[str, list[str]] = {}  # call id -> PreToolUse context for its result
        self._started: set[str] = set()  # sessions whose SessionStart hooks ran in this run
        self._start_context: dict[str, str] = {}  # SessionStart context not yet recorded
        self._children: dict[str, str] = {}  # child session id -> its label (SubagentStart's agent_type)
        self._last_error: dict[str, str] = {}  # session id -> kind of its turn's last error event
        self._background: set[asyncio.Task[None]] = set()
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}  # call id -> Claude Code's name and input
        self._pending: dict[str, list[str]] = {}  # session id -> what async hooks said, for its next prompt

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

    def notice(self, line: str) -> None:
        """A line for the user (``crab_hooks.worktrees``)."""
        self._notice(line)

    def event_payload(self, event: str, session_id: str, cwd: Path, fields: dict[str, Any]) -> dict[str, Any]:
        """The JSON a hook of ``event`` gets, with ``fields`` (``crab_hooks.worktrees``)."""
        return {**self._event(event, session_id, cwd), **fields}

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
        """The answers of the hooks that match, run at once; an ``async`` hook is started in the
        background instead (no answer here: what it says reaches the model with the next prompt)."""
        commands = self._matching(event, matched, payload, cwd)
        for command in commands:
            if command.background:
                self._later(self._in_background(command, event, payload, cwd))
        commands = [c for c in commands if not c.background]
        if not commands:
            return []
        if event == "SessionEnd":
            commands = [c if c.own_timeout else dataclasses.replace(c, timeout=SESSION_END_TIMEOUT) for c in commands]
        runs = await asyncio.gather(*(run_hook(command, payload, cwd) for command in commands))
        answers = [read(run, event) for run in runs]
        for answer in answers:
            if answer.notice:
                self._notice(answer.notice)
        return answers

    # --- tool calls --------------------------------------------------------------------------

    def wants_tool_calls(self, event: str) -> bool:
        """Whether a tool call has anything to do here: before it (``PreToolUse``) hook commands
        for it or for the permission question that may follow (PermissionRequest, Notification);
        after it (``PostToolUse``) hook commands for a call that succeeded or failed, or what was
        kept for the call (``PreToolUse`` context, its name and input for a permission question)."""
        groups = self.hooks.groups
        if event == "PreToolUse":
            return bool(groups.get("PreToolUse") or groups.get("PermissionRequest") or groups.get("Notification"))
        return bool(groups.get("PostToolUse") or groups.get("PostToolUseFailure") or self._tool_context or self._calls)

    async def before_tool(self, call: ToolCall, tool: Tool, ctx: ToolContext) -> Deny | Replace | None:
        if self.hooks.groups.get("PermissionRequest") or self.hooks.groups.get("Notification"):
            # the permission question that may follow names the call only by its id
            self._calls[call.id] = names.to_claude(call.name, call.arguments, ctx.workspace)
            while len(self._calls) > MAX_CALLS_KEPT:  # a call refused before it ran never reaches after_tool
                del self._calls[next(iter(self._calls))]
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
        """``PostToolUse`` after a call that succeeded, ``PostToolUseFailure`` after one that failed."""
        notes = [("PreToolUse", text) for text in self._tool_context.pop(call.id, [])]
        self._calls.pop(call.id, None)
        event = "PostToolUseFailure" if result.is_error else "PostToolUse"
        if self.hooks.groups.get(event):
            workspace = ctx.workspace
            name, tool_input = names.to_claude(call.name, call.arguments, workspace)
            if result.is_error:
                fields: dict[str, Any] = {"tool_use_id": call.id, "error": result.content, "is_interrupt": False}
            else:
                fields = {"tool_response": _response(name, tool_input, result), "tool_use_id": call.id}
            payload = self._event(event, ctx.session_id, workspace, tool_name=name, tool_input=tool_input, **fields)
            for answer in await self._ask(event, (name, call.name), payload, workspace):
                notes.extend((event, text) for text in (answer.block, answer.context) if text)
        if not notes:
            return None
        added = "\n\n".join(f"[{event} hook] {text}" for event, text in notes)
        return ToolResult(f"{result.content}\n\n{added}", result.is_error, result.details)

    async def permission(self, request: PermissionRequest, session_id: str, workspace: Path) -> str | None:
        """``PermissionRequest`` before the user is asked: a ``deny`` (or exit 2) from any hook
        refuses, an ``allow`` from the user's own hooks (never a project's ``.claude`` files)
        allows; otherwise ``Notification`` (``permission_prompt``) runs and the user is asked."""
        name, tool_input = self._calls.get(request.call_id) or (names.claude_name(request.tool, {}), {})
        if self.hooks.groups.get("PermissionRequest"):
            payload = self._event("PermissionRequest", session_id, workspace, tool_name=name, tool_input=tool_input)
            matching = self._matching("PermissionRequest", (name, request.tool), payload, workspace)
            commands = [c for c in matching if not c.background]
            answers = await self._ask("PermissionRequest", (name, request.tool), payload, workspace)
            for answer in answers:
                if answer.block is not None:
                    self._notice(f"PermissionRequest hook denied {name}: {_first_line(answer.block)}")
                    return "deny"
            allowed = [c for c, a in zip(commands, answers, strict=True) if a.allow]
            if any(not c.project for c in allowed):
                return "once"
            for command in allowed:
                self._notice(
                    f"PermissionRequest hook {command.command!r} ({command.source}) may deny, never allow: "
                    "a project's .claude files do not approve calls; you are asked instead"
                )
        if self.hooks.groups.get("Notification"):
            payload = self._event(
                "Notification",
                session_id,
                workspace,
                message=f"crab needs your permission to use {name}",
                title="Permission needed",
                notification_type="permission_prompt",
            )
            self._later(self._ask("Notification", ("permission_prompt",), payload, workspace))
        return None

    # --- prompts, turn ends, session starts --------------------------------------------------

    async def prompt(self, prompt: str, session_id: str, workspace: Path, child: bool = False) -> Deny | str | None:
        """``SessionStart`` and ``InstructionsLoaded`` (first prompt of a session in this run), then
        ``UserPromptSubmit``; in a child session (a subagent's, whose prompt the model wrote) only
        ``SubagentStart``, whose context goes to the subagent."""
        if child:
            return await self._subagent_start(session_id, workspace)
        context: list[str] = []
        if session_id not in self._started:
            self._started.add(session_id)
            self._instructions(session_id, workspace, "session_start")
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
        later = [f"[async hook] {text}" for text in self._pending.pop(session_id, [])]
        return "\n\n".join([*([started] if started else []), *later, *context]) or None

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
        model = self.handle.model if self.handle is not None else ""
        payload = self._event("SessionStart", session_id, workspace, source=source, model=model)
        answers = await self._ask("SessionStart", (source,), payload, workspace)
        return "\n\n".join(a.context for a in answers if a.context) or None

    async def _subagent_start(self, session_id: str, workspace: Path) -> str | None:
        label = self._children.setdefault(session_id, "")
        if session_id in self._started or not self.hooks.groups.get("SubagentStart"):
            self._started.add(session_id)
            return None
        self._started.add(session_id)
        payload = self._event("SubagentStart", session_id, workspace, agent_id=session_id, agent_type=label)
        answers = await self._ask("SubagentStart", (label,), payload, workspace)
        return "\n\n".join(a.context for a in answers if a.context) or None

    async def turn_end(self, session_id: str, workspace: Path, text: str, continued: int) -> str | None:
        """``Stop`` (or ``SubagentStop`` in a child session): a block keeps the turn going."""
        event = "SubagentStop" if session_id in self._children else "Stop"
        if not self.hooks.groups.get(event):
            return None
        fields: dict[str, Any] = {"stop_hook_active": continued > 0}
        matched: tuple[str, ...] = ()
        if event == "SubagentStop":
            label = self._children[session_id]
            fields.update(agent_id=session_id, agent_type=label, agent_transcript_path=None)
            matched = (label,)
        payload = self._event(event, session_id, workspace, **fields, last_assistant_message=text)
        answers = await self._ask(event, matched, payload, workspace)
        if any(a.stop for a in answers):
            return None  # continue: false ends the turn whatever else was said
        reasons = [a.block for a in answers if a.block]
        return "\n\n".join(reasons) or None

    # --- session ends, and what crab only observes ------------------------------------------

    async def session_end(self, session_id: str, workspace: Path, reason: str) -> None:
        """``SessionEnd`` for a session the agent left (not a child's: its end is SubagentStop).
        crab's reasons (switch, end, shutdown) are all Claude Code's ``other``."""
        self._started.discard(session_id)
        if reason == "child" or session_id in self._children:
            self._children.pop(session_id, None)
            return
        if self.hooks.groups.get("SessionEnd"):
            payload = self._event("SessionEnd", session_id, workspace, reason="other")
            await self._ask("SessionEnd", ("other",), payload, workspace)

    def observe(self, event: Event, session_id: str) -> None:
        """What ``crab_event`` shows: compactions (PreCompact, PostCompact, InstructionsLoaded),
        a turn that ended in an error (StopFailure) and the labels of child sessions."""
        if isinstance(event, ChildEvent):
            if isinstance(event.event, TurnStarted):
                self._children[event.session_id] = event.label
            return
        workspace = self.handle.workspace if self.handle is not None else Path.cwd()
        if isinstance(event, CompactionEvent):
            trigger = COMPACT_TRIGGERS.get(event.reason, "auto")
            if event.phase == "start" and self.hooks.groups.get("PreCompact"):
                payload = self._event("PreCompact", session_id, workspace, trigger=trigger, custom_instructions="")
                self._later(self._ask("PreCompact", (trigger,), payload, workspace))
            elif event.phase == "done":
                if self.hooks.groups.get("PostCompact"):
                    payload = self._event(
                        "PostCompact", session_id, workspace, trigger=trigger, compact_summary=event.summary or ""
                    )
                    self._later(self._ask("PostCompact", (trigger,), payload, workspace))
                self._instructions(session_id, workspace, "compact")
        elif isinstance(event, TurnEnded) and event.stop == "error" and self.hooks.groups.get("StopFailure"):
            kind = STOP_ERRORS.get(self._last_error.pop(session_id, "unknown"), "unknown")
            details = event.error or ""
            payload = self._event(
                "StopFailure", session_id, workspace, error=kind, error_details=details, last_assistant_message=details
            )
            self._later(self._quiet("StopFailure", (kind,), payload, workspace))
        elif isinstance(event, TurnEnded):
            self._last_error.pop(session_id, None)
        elif isinstance(event, ErrorEvent):
            self._last_error[session_id] = event.kind

    def _matching(self, event: str, matched: Sequence[str], payload: dict[str, Any], cwd: Path) -> list[HookCommand]:
        """The hooks of ``event`` whose matcher takes ``matched`` and whose ``if`` (read only on
        tool events, as in Claude Code) names this call."""
        found = self.hooks.commands(event, matched)
        if not any(c.condition is not None for c in found):
            return found
        tool, given = payload.get("tool_name"), payload.get("tool_input")
        return [
            c
            for c in found
            if c.condition is None
            or (
                event in conditions.TOOL_EVENTS
                and isinstance(tool, str)
                and conditions.matches(c.condition, tool, given if isinstance(given, dict) else {}, cwd)
            )
        ]

    async def _in_background(self, command: HookCommand, event: str, payload: dict[str, Any], cwd: Path) -> None:
        """An ``async`` hook: its ``systemMessage`` and ``additionalContext`` are context for the
        model with the session's next prompt, as Claude Code delivers them on the next turn."""
        answer = read(await run_hook(command, payload, cwd), event)
        said = [text for text in (answer.context, answer.message) if text]
        if said:
            self._pending.setdefault(str(payload.get("session_id")), []).extend(said)
        elif answer.notice and not answer.message:
            self._notice(answer.notice)

    def _instructions(self, session_id: str, workspace: Path, reason: str) -> None:
        """``InstructionsLoaded`` for each instruction file crab reads into the system prompt."""
        if not self.hooks.groups.get("InstructionsLoaded"):
            return
        for path, memory_type in instruction_files(workspace):
            payload = self._event(
                "InstructionsLoaded",
                session_id,
                workspace,
                file_path=str(path),
                memory_type=memory_type,
                load_reason=reason,
            )
            self._later(self._quiet("InstructionsLoaded", (reason,), payload, workspace))

    async def _quiet(self, event: str, matched: Sequence[str], payload: dict[str, Any], cwd: Path) -> None:
        """Run an event whose output and exit code Claude Code ignores (StopFailure, InstructionsLoaded)."""
        commands = self._matching(event, matched, payload, cwd)
        await asyncio.gather(*(run_hook(command, payload, cwd) for command in commands))

    def _later(self, work: Coroutine[Any, Any, Any]) -> None:
        try:
            task = asyncio.get_running_loop().create_task(_discard(work))
        except RuntimeError:  # no loop runs this event (a synchronous emit): nothing to run it in
            work.close()
            return
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def settle(self) -> None:
        """Wait for the hooks still running in the background (each is bounded by its timeout)."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:200]


async def _discard(work: Coroutine[Any, Any, Any]) -> None:
    with contextlib.suppress(Exception):
        await work


def instruction_files(workspace: Path) -> list[tuple[Path, str]]:
    """``(path, memory_type)`` of the instruction files crab's system prompt reads: the user's
    ``$CRAB_HOME/AGENTS.md`` (or ``CLAUDE.md``), then one per folder from the repository root
    down to the workspace (``AGENTS.md``, else ``CLAUDE.md``), as ``crab_system_prompt`` says."""
    found: list[tuple[Path, str]] = []

    def first(folder: Path) -> Path | None:
        for name in INSTRUCTION_FILES:
            path = folder / name
            with contextlib.suppress(OSError):
                if path.is_file() and path.stat().st_size > 0:
                    return path
        return None

    home = crab_home()
    own = first(home)
    if own is not None:
        found.append((own, "User"))
    try:
        here = workspace.resolve()
    except OSError:
        return found
    root = next((f for f in (here, *here.parents) if (f / ".git").exists()), here)
    folders = [root, *reversed([p for p in here.parents if p.is_relative_to(root) and p != root])]
    if here != root:
        folders.append(here)
    for folder in folders:
        if folder == home.resolve():
            continue
        hit = first(folder)
        if hit is not None:
            found.append((hit, "Project"))
    return found


def _response(name: str, tool_input: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    """``tool_response`` as far as crab knows it: the text the model gets, whether it failed, and
    the fields Claude Code's scripts read most (``stdout`` of Bash, ``filePath`` of file tools)."""
    response: dict[str, Any] = {"content": result.content, "is_error": result.is_error, "success": not result.is_error}
    if name == "Bash":
        response.update(stdout=result.content, stderr="", interrupted=False, isImage=False)
    if "file_path" in tool_input:
        response["filePath"] = tool_input["file_path"]
    return response
