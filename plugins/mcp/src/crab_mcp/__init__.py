"""crab-mcp: MCP servers' tools become crab tools; ``crab mcp serve`` offers crab's tools over MCP.

Hook implementations only. Servers start in ``crab_startup`` (they must answer before their
tools are known) and join the registry through ``AgentHandle.add_tools``; they stop in
``crab_shutdown``. Nothing here imports ``mcp``: ``crab --help`` loads none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import crab

if TYPE_CHECKING:
    from crab import AgentHandle, Config, ConfigTable

    from crab_mcp.manager import Manager

CRAB_API = ">=1.0,<2"
PLUGIN = "mcp"

_running: dict[int, Manager] = {}
"""The servers of each live agent (by the id of its config), from startup to shutdown."""


@crab.hookimpl
def crab_config_table() -> ConfigTable:
    """``[plugins.mcp]``: see ``crab_mcp.settings.TABLE``."""
    from crab_mcp.settings import TABLE

    return TABLE


@crab.hookimpl
async def crab_startup(agent: AgentHandle) -> None:
    """Start every enabled server in parallel and register the tools of those that answered."""
    from crab_mcp.lifecycle import start_servers

    manager = await start_servers(agent, PLUGIN)
    if manager is not None:
        _running[id(agent.config)] = manager


@crab.hookimpl
async def crab_shutdown(agent: AgentHandle) -> None:
    """Stop this agent's servers (and their processes)."""
    manager = _running.pop(id(agent.config), None)
    if manager is not None:
        await manager.stop()


@crab.hookimpl
def crab_cli(app: Any, config: Config) -> None:
    """``crab mcp list|tools|add|serve``."""
    from crab_mcp.cli import register

    register(app, config)
