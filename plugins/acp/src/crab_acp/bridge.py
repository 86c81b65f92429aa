"""crab-acp's plugin inside one session's ``crab.Agent``: the editor's tools, the session's mode.

Handed to the agent as ``plugin_objects`` (never an entry point): it keeps the agent's
``crab.AgentHandle`` from ``crab_startup`` (commands, stored history), offers the tools that go
through the editor when the client has the capability (``editor_fs``, ``editor_terminal``), and
refuses writes and commands while the session is in the ``read-only`` mode, with the words
crab's permission gate uses, before the gate is asked. In the ``plan`` mode it sets the session's
plan switch, which the gate reads (docs/security.md, "Plan mode"), and when an approved plan turned
it off it moves the editor's mode to ``ask``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import crab
from acp.helpers import update_current_mode

NAME = "acp-editor"
PLAN_KEY = "crab.permissions.plan"
"""The session-state key of its plan switch, which core's permission gate reads."""


@dataclass
class EditorCaps:
    """What the client said it can do (``clientCapabilities``)."""

    read_text_file: bool = False
    write_text_file: bool = False
    terminal: bool = False


class Bridge:
    """One session's link between its agent and the editor connection."""

    def __init__(self, connection: Any, caps: EditorCaps, mode: str) -> None:
        self.connection = connection
        self.caps = caps
        self.mode = mode
        self.plan_switch: bool | None = True if mode == "plan" else None
        """The plan switch to put in the session's state at its next tool call (the mode changed)."""
        self.handle: crab.AgentHandle | None = None
        self.seen: Callable[[crab.events.Event], None] = lambda event: None
        """Told of every event as it is emitted (the session's ``UpdateMapper.seen``)."""

    @crab.hookimpl
    def crab_startup(self, agent: crab.AgentHandle) -> None:
        self.handle = agent

    @crab.hookimpl
    def crab_tools(self) -> list[crab.Tool]:
        tools: list[crab.Tool] = []
        if self.caps.read_text_file or self.caps.write_text_file:
            from crab_acp.editor_fs import editor_file_tools

            # What the client does not offer is done on disk, by the same tools (one read gate).
            tools += editor_file_tools(
                self._read if self.caps.read_text_file else None, self._write if self.caps.write_text_file else None
            )
        if self.caps.terminal:
            from crab_acp.editor_terminal import editor_bash

            tools.append(editor_bash(lambda: self.connection))
        return tools

    def set_mode(self, mode: str) -> None:
        """The editor's mode; entering or leaving ``plan`` switches the session's plan mode."""
        if (mode == "plan") != (self.mode == "plan"):
            self.plan_switch = mode == "plan"
        self.mode = mode

    @crab.hookimpl
    async def crab_before_tool_call(self, tool: crab.Tool, ctx: crab.ToolContext) -> crab.hooks.Deny | None:
        if self.plan_switch is not None:
            ctx.state[PLAN_KEY] = self.plan_switch
            self.plan_switch = None
        elif self.mode == "plan" and ctx.state.get(PLAN_KEY) is False:
            # the user approved a plan (or left plan mode): the session runs as ask, and says so
            self.mode = "ask"
            await self.connection.session_update(session_id=ctx.session_id, update=update_current_mode("ask"))
        if self.mode == "read-only" and tool.permission in ("write", "exec"):
            return crab.hooks.Deny(
                f"Refused: {tool.name} needs {tool.permission} permission and this session is read-only "
                "(the editor's mode). Tell the user what you would change instead."
            )
        return None

    async def _read(self, session_id: str, path: str) -> str:
        answer = await self.connection.read_text_file(session_id=session_id, path=path)
        return str(answer.content)

    async def _write(self, session_id: str, path: str, text: str) -> None:
        await self.connection.write_text_file(session_id=session_id, path=path, content=text)
