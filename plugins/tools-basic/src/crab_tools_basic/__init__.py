"""crab-tools-basic: registers read, write, edit, bash (with background jobs: bash_output,
bash_kill, /jobs), glob, grep and ls, and the system prompt part on working with them (hook
implementations only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import crab

if TYPE_CHECKING:
    from crab import AgentHandle, Command, Config, ConfigTable, Tool

CRAB_API = ">=0.1,<0.2"


@crab.hookimpl
def crab_config_table() -> ConfigTable:
    """``[plugins.tools-basic]``: see ``crab_tools_basic.settings.TABLE``."""
    from crab_tools_basic.settings import TABLE

    return TABLE


@crab.hookimpl
def crab_tools(config: Config) -> list[Tool]:
    """The tools; bash's loop timeout follows ``bash_max_timeout`` from this config."""
    from crab_tools_basic.registry import build_tools

    return build_tools(config.plugin_settings("tools-basic"))


@crab.hookimpl
def crab_commands() -> list[Command]:
    """``/jobs``: this session's background shells."""
    from crab_tools_basic.registry import build_commands

    return build_commands()


@crab.hookimpl
def crab_system_prompt() -> str:
    """How to work on code with these tools (``crab_tools_basic.guidance``): present exactly
    when the tools are."""
    from crab_tools_basic.guidance import GUIDANCE

    return GUIDANCE


@crab.hookimpl
async def crab_session_end(agent: AgentHandle, session_id: str) -> None:
    """End the background jobs of the session the agent left (``/new``, ``/clear``, ``/resume``)."""
    from crab_tools_basic.jobs import end_session

    await end_session(agent.config, session_id)


@crab.hookimpl
async def crab_shutdown(agent: AgentHandle) -> None:
    """End this agent's background jobs (crab's exit ends any left, too)."""
    from crab_tools_basic.jobs import end_agent

    await end_agent(agent.config)
