"""Crab's tools outside a model loop, for bridges that hand them to another program
(``open_toolbox``, docs/api.md)."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crab._contracts.tools import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from crab._contracts.config import Config
    from crab._contracts.interception import Answer, PermissionRequest
    from crab._host.plugin_host import PluginHost


@dataclass
class ToolBox:
    """The loaded tools of one workspace and the way to call them.

    ``call`` runs one call the way the loop does: argument check, the ``crab_before_tool_call``
    interceptors with the permission gate last, the tool with its timeout, the
    ``crab_after_tool_call`` interceptors. Nobody can be asked, so the classes in ``allow`` are the
    whole answer: any other non-read call is refused with an error result ending with ``hint``
    (how the user allows it), and the gate still applies ``read-only`` mode.
    """

    host: PluginHost
    config: Config
    workspace: Path
    allow: frozenset[str] = frozenset()
    hint: str = ""
    session_id: str = field(default_factory=lambda: f"bridge-{uuid.uuid4().hex[:12]}")
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def tools(self) -> Mapping[str, Tool]:
        """Every loaded tool, by name."""
        return self.host.registry("tools")

    @property
    def failures(self) -> list[str]:
        """One line per plugin failure so far (show them on stderr)."""
        return [f.line for f in self.host.failures]

    async def _ask(self, request: PermissionRequest) -> Answer:
        return "once" if request.permission in self.allow else "deny"

    def context(self, tool: Tool, call_id: str) -> ToolContext:
        return ToolContext(
            session_id=self.session_id,
            workspace=self.workspace,
            call_id=call_id,
            settings=self.config.plugin_settings(tool.plugin) if tool.plugin else {},
            state=self.state,
            config=self.config,
            ask=self._ask,
            local=False,
        )

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Run one call; every failure (unknown tool, refusal, timeout, crash) is an error result."""
        from crab._contracts.messages import ToolCall
        from crab._loop.tool_runner import ToolRunner

        async def record(call: ToolCall, result: ToolResult, ms: float) -> None:
            return None

        timeout = float(self.config.get("crab.tool_timeout", 120.0))
        runner = ToolRunner(self.host.dispatch, self.tools, timeout, lambda c, t: self.context(t, c.id), record)
        tool = self.tools.get(name)
        if tool is not None and tool.permission != "read" and tool.permission not in self.allow:
            refusal = f"Refused: {name} needs {tool.permission} permission, which this bridge does not grant."
            return ToolResult(f"{refusal} {self.hint}".strip(), is_error=True)
        call = ToolCall(id=f"call-{uuid.uuid4().hex[:12]}", name=name, arguments=dict(arguments))
        return await runner.execute(call)


def open_toolbox(
    plugins: str | None = None,
    *,
    allow: Collection[str] = ("read",),
    workspace: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> ToolBox:
    """Load this folder's config and plugins (``plugins`` as ``--plugins``) and collect their tools.

    No agent starts, so no ``crab_startup`` runs and nothing a plugin only starts then (MCP
    servers) is there.

    Raises ``ConfigError`` for a bad config, like any command. ``allow`` lists the permission
    classes a call may have without asking (``read`` always passes).
    """
    from crab._assembly.root import Layers, assemble_host

    where = workspace or Path.cwd()
    config, host = assemble_host(workspace=where, layers=Layers(settings=overrides, source="--set"), plugins=plugins)
    host.collect_all()
    return ToolBox(host=host, config=config, workspace=where, allow=frozenset(allow))
