"""crab-lsp: language servers per file type (``[plugins.lsp.servers.NAME]``), started on first use,
one per workspace; after ``write`` and ``edit`` the file's new diagnostics join the tool's result,
and the tools ``diagnostics``, ``definition``, ``references``, ``hover`` and ``symbols`` ask them.

Hook implementations only; the work is in ``crab_lsp.runtime`` and the modules it uses. The entry
point is the class: crab makes one object per plugin host, which keeps the servers of its agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import crab

if TYPE_CHECKING:
    from crab import AgentHandle, Config, ConfigTable, Tool, ToolCall, ToolContext, ToolResult

    from crab_lsp.runtime import Lsp

CRAB_API = ">=1.7,<2"  # crab.processes.start (1.7)
EDIT_TOOLS = ("write", "edit")
"""crab-tools-basic's tools that change a file named by their ``path``."""


class LspPlugin:
    """The ``lsp`` plugin: one per host."""

    CRAB_API = CRAB_API

    def __init__(self) -> None:
        self.lsp: Lsp | None = None

    @crab.hookimpl
    def crab_config_table(self) -> ConfigTable:
        """``[plugins.lsp]``: see ``crab_lsp.settings.TABLE``."""
        from crab_lsp.settings import TABLE

        return TABLE

    @crab.hookimpl
    def crab_tools(self, config: Config) -> list[Tool]:
        """``diagnostics``, ``definition``, ``references``, ``hover``, ``symbols`` (when servers are configured)."""
        if not config.plugin_settings("lsp").get("servers"):
            return []
        from crab_lsp.tools import make_tools

        return make_tools(lambda: self.lsp)

    @crab.hookimpl
    def crab_startup(self, agent: AgentHandle) -> None:
        """Note the servers; none starts before a file of its own is used."""
        settings = agent.config.plugin_settings("lsp")
        if settings.get("servers"):
            from crab_lsp.runtime import Lsp

            self.lsp = Lsp(agent.workspace, settings)

    @crab.hookimpl
    async def crab_after_tool_call(
        self, call: ToolCall, tool: Tool, result: ToolResult, ctx: ToolContext
    ) -> ToolResult | None:
        """After ``write`` or ``edit``: the file's new diagnostics join the result."""
        path = call.arguments.get("path")
        if self.lsp is None or call.name not in EDIT_TOOLS or result.is_error or not isinstance(path, str):
            return None
        said = await self.lsp.after_edit(path)
        if not said:
            return None
        from crab_lsp.runtime import with_diagnostics

        return with_diagnostics(result, said)

    @crab.hookimpl
    async def crab_shutdown(self) -> None:
        """End every server (shutdown, then the process group)."""
        if self.lsp is not None:
            await self.lsp.close()
