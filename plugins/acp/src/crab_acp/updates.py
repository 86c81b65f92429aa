"""crab's events as ACP ``session/update``s: message and thought chunks, tool calls, plans.

``UpdateMapper`` keeps, per session, what it told the editor of each tool call (title, kind,
locations, raw input), so the result's update, a permission question and a replayed history
describe the call the same way. A result's ``diffs`` become ACP diff content (the editor shows
them as a review), its text the call's output; a call that ran in an editor terminal keeps that
terminal in its content. Pure: no I/O, so each mapping is tested on its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import acp
import crab
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    ToolKind,
)

Update = AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallProgress | AgentPlanUpdate
Content = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent

KINDS: Mapping[str, ToolKind] = {
    "read": "read",
    "write": "edit",
    "edit": "edit",
    "bash": "execute",
    "glob": "search",
    "grep": "search",
    "ls": "search",
    "web_search": "search",
    "web_fetch": "fetch",
    "fetch": "fetch",
    "todo": "think",
    "todo_write": "think",
    "plan": "think",
}
"""Tool names crab's plugins use, by ACP kind (the icon an editor shows); others go by permission."""

BY_PERMISSION: Mapping[str, ToolKind] = {"read": "read", "write": "edit", "exec": "execute", "network": "fetch"}
PATH_KEYS = ("path", "file_path", "filePath", "file", "filename")
PLAN_STATUS = {"pending": "pending", "in_progress": "in_progress", "done": "completed"}
TITLE_LIMIT = 120


@dataclass
class CallView:
    """How the editor was told of one tool call."""

    id: str
    name: str
    title: str
    kind: ToolKind
    locations: list[ToolCallLocation]
    raw_input: dict[str, Any]
    terminal: str | None = None


def _short(text: str, limit: int = TITLE_LIMIT) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _path_of(arguments: Mapping[str, Any]) -> str | None:
    for key in PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def title_of(name: str, arguments: Mapping[str, Any]) -> str:
    """One line saying what the call does: ``read src/app.py``, ``bash: make test``."""
    path = _path_of(arguments)
    if name == "bash" and isinstance(arguments.get("command"), str):
        return _short(f"bash: {arguments['command']}")
    if path is not None:
        return _short(f"{name} {path}")
    for key in ("pattern", "query", "url"):
        if isinstance(arguments.get(key), str):
            return _short(f"{name} {arguments[key]}")
    return name


class UpdateMapper:
    """One session's events as updates; ``tools`` gives a tool's permission class by name."""

    def __init__(self, workspace: str, permissions: Mapping[str, str] | None = None) -> None:
        self.workspace = workspace
        self.permissions: Mapping[str, str] = permissions or {}
        self.calls: dict[str, CallView] = {}

    # --- what a call is ---------------------------------------------------------------------

    def absolute(self, path: str) -> str:
        return os.path.normpath(os.path.join(self.workspace, os.path.expanduser(path)))

    def view(self, call: crab.messages.ToolCall) -> CallView:
        kind = KINDS.get(call.name) or BY_PERMISSION.get(self.permissions.get(call.name, ""), "other")
        path = _path_of(call.arguments)
        locations = []
        if path is not None:
            line = call.arguments.get("offset")
            where = line if isinstance(line, int) and not isinstance(line, bool) and line > 0 else None
            locations.append(ToolCallLocation(path=self.absolute(path), line=where))
        view = CallView(call.id, call.name, title_of(call.name, call.arguments), kind, locations, dict(call.arguments))
        self.calls[call.id] = view
        return view

    def started(self, call: crab.messages.ToolCall) -> ToolCallStart:
        view = self.calls.get(call.id) or self.view(call)
        return acp.start_tool_call(
            view.id, view.title, kind=view.kind, status="pending", locations=view.locations, raw_input=view.raw_input
        )

    def question(self, request: crab.PermissionRequest) -> ToolCallUpdate:
        """The tool call a permission question is about, as ``session/request_permission`` shows it."""
        view = self.calls.get(request.call_id)
        if view is None:  # a question about no single call (an MCP server's elicitation)
            return ToolCallUpdate(tool_call_id=request.call_id or "question", title=request.summary, status="pending")
        return ToolCallUpdate(
            tool_call_id=view.id,
            title=view.title,
            kind=view.kind,
            status="pending",
            locations=view.locations or None,
            raw_input=view.raw_input,
            content=[acp.tool_content(acp.text_block(request.summary))],
        )

    def result_content(self, call_id: str, text: str, diffs: Sequence[crab.events.FileDiff]) -> list[Content]:
        content: list[Content] = []
        view = self.calls.get(call_id)
        if view is not None and view.terminal is not None:
            content.append(acp.tool_terminal_ref(view.terminal))
        for diff in diffs:
            if diff.after is not None:
                content.append(acp.tool_diff_content(self.absolute(diff.path), diff.after, diff.before))
            else:  # too large to send whole, or deleted: the unified diff as text
                content.append(acp.tool_content(acp.text_block(diff.unified)))
        if text:
            content.append(acp.tool_content(acp.text_block(text)))
        return content

    def finished(self, event: crab.events.ToolResultEvent) -> ToolCallProgress:
        return acp.update_tool_call(
            event.call_id,
            status="failed" if event.is_error else "completed",
            content=self.result_content(event.call_id, event.content, event.diffs),
            raw_output={"content": event.content, "is_error": event.is_error},
        )

    def terminal(self, call_id: str, terminal_id: str) -> ToolCallProgress:
        """The call runs in editor terminal ``terminal_id``: the editor shows it live."""
        view = self.calls.get(call_id)
        if view is not None:
            view.terminal = terminal_id
        return acp.update_tool_call(call_id, status="in_progress", content=[acp.tool_terminal_ref(terminal_id)])

    # --- events -------------------------------------------------------------------------------

    def updates(self, event: crab.events.Event) -> list[Update]:
        """What the editor is told of ``event`` (often nothing: turn bookkeeping, usage)."""
        if isinstance(event, crab.events.TextDelta):
            return [acp.update_agent_message_text(event.text)] if event.text else []
        if isinstance(event, crab.events.ThinkingDelta):
            return [acp.update_agent_thought_text(event.text)] if event.text else []
        if isinstance(event, crab.events.ToolCallEvent):
            return [self.started(event.call)]
        if isinstance(event, crab.events.ToolResultEvent):
            return [self.finished(event)]
        if isinstance(event, crab.events.PlanEvent):
            return [plan(event.items)]
        if isinstance(event, crab.events.CommandOutput):
            return [acp.update_agent_message_text(event.text)] if event.text else []
        if isinstance(event, crab.events.NoticeEvent) and event.level == "warning":
            return [acp.update_agent_message_text(f"\n[crab] {event.message}\n")]
        if isinstance(event, crab.events.CompactionEvent):
            return [acp.update_agent_thought_text(event.line() + "\n")]
        if isinstance(event, crab.events.RetryEvent):
            retry = f"retrying ({event.attempt}/{event.max_attempts}) in {event.delay:g} s: {event.reason}\n"
            return [acp.update_agent_thought_text(retry)]
        return []


def plan(items: Sequence[crab.events.PlanItem]) -> AgentPlanUpdate:
    """A plan update with the whole checklist (ACP replaces the plan each time, as crab's event does)."""
    return acp.update_plan(
        acp.plan_entry(item.text, status=PLAN_STATUS.get(item.status, "pending"))  # type: ignore[arg-type]
        for item in items
    )


@dataclass
class Replay:
    """A stored conversation as updates, for ``session/load``."""

    mapper: UpdateMapper
    out: list[Any] = field(default_factory=list)

    def messages(self, messages: Sequence[crab.messages.Message]) -> list[Any]:
        for message in messages:
            if isinstance(message, crab.messages.UserMessage):
                if message.content:
                    self.out.append(acp.update_user_message_text(message.content))
            elif isinstance(message, crab.messages.AssistantMessage):
                for thought in message.thinking:
                    if thought.text and not thought.redacted:
                        self.out.append(acp.update_agent_thought_text(thought.text))
                if message.content:
                    self.out.append(acp.update_agent_message_text(message.content))
                for call in message.tool_calls:
                    self.out.append(self.mapper.started(call))
            elif isinstance(message, crab.messages.ToolResultMessage):
                self.out.append(
                    acp.update_tool_call(
                        message.call_id,
                        status="failed" if message.is_error else "completed",
                        content=self.mapper.result_content(message.call_id, message.content, ()),
                    )
                )
        return self.out
