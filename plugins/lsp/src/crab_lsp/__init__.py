"""crab-lsp: language servers per file type (``[plugins.lsp.servers.NAME]``), started on first use,
one per workspace; after ``write`` and ``edit`` the file's new diagnostics join the tool's result,
and the tools ``diagnostics``, ``definition``, ``references``, ``hover`` and ``symbols`` ask them.

Hook implementations only; the work is in ``crab_lsp.runtime`` and the modules it uses. The entry
point is the class: crab makes one object per plugin host, which keeps the servers of its agent.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import crab

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from crab import AgentHandle, Config, ConfigTable, Tool, ToolContext, ToolResult
    from crab.messages import ToolCall

    from crab_lsp.runtime import Lsp

CRAB_API = ">=0.1,<0.2"
EDIT_TOOLS = ("write", "edit")
"""crab-tools-basic's tools that change a file named by their ``path``."""


class LspPlugin:
    """The ``lsp`` plugin: one per host."""

    CRAB_API = CRAB_API

    def __init__(self) -> None:
        self.settings: Mapping[str, Any] | None = None
        self.workspaces: dict[Path, Lsp] = {}
        """One ``Lsp`` (its servers) per workspace a session works in, made on first use."""

    @property
    def lsp(self) -> Lsp | None:
        """The first workspace's (the agent's, in a run with one)."""
        return next(iter(self.workspaces.values()), None)

    def for_workspace(self, workspace: Path) -> Lsp | None:
        if self.settings is None:
            return None
        key = workspace.resolve()
        found = self.workspaces.get(key)
        if found is None:
            from crab_lsp.runtime import Lsp

            found = self.workspaces[key] = Lsp(key, self.settings)
        return found

    @crab.hookimpl
    def crab_config_table(self) -> ConfigTable:
        """``[plugins.lsp]``: see ``crab_lsp.settings.TABLE``."""
        from crab_lsp.settings import TABLE

        return TABLE

    @crab.hookimpl
    def crab_doctor(self, config: Config) -> list[tuple[str, str]]:
        """One line per configured server: found on PATH (or as a file), or how to install it."""
        from crab_lsp.settings import doctor_lines

        return doctor_lines(config.plugin_settings("lsp"))

    @crab.hookimpl
    def crab_tools(self, config: Config) -> list[Tool]:
        """``diagnostics``, ``definition``, ``references``, ``hover``, ``symbols`` (when servers are configured)."""
        if not config.plugin_settings("lsp").get("servers"):
            return []
        from crab_lsp.tools import make_tools

        return make_tools(self.for_workspace)

    @crab.hookimpl
    def crab_startup(self, agent: AgentHandle) -> None:
        """Note the servers; none starts before a file of its own is used."""
        settings = agent.config.plugin_settings("lsp")
        if settings.get("servers"):
            self.settings = settings
            self.for_workspace(agent.workspace)

    @crab.hookimpl
    def crab_after_tool_call(
        self, call: ToolCall, tool: Tool, result: ToolResult, ctx: ToolContext
    ) -> Awaitable[ToolResult | None] | None:
        """After ``write`` or ``edit``: the file's new diagnostics join the result. A plain function
        answering None at once for every other call (no coroutine made and awaited per call)."""
        path = call.arguments.get("path")
        if self.settings is None or call.name not in EDIT_TOOLS or result.is_error or not isinstance(path, str):
            return None
        lsp = self.for_workspace(ctx.workspace)
        if lsp is None:
            return None
        from crab_lsp.runtime import after_edit_result

        return after_edit_result(lsp, path, result)

    @crab.hookimpl
    async def crab_shutdown(self) -> None:
        """End every server (shutdown, then the process group)."""
        workspaces, self.workspaces = list(self.workspaces.values()), {}
        for lsp in workspaces:
            await lsp.close()
