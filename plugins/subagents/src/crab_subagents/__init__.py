"""crab-subagents: a ``task`` tool that runs a child agent, defined in a Markdown agent file, on a sub-task.

Hook implementations only; the work is in ``crab_subagents.task`` (the tool) and
``crab_subagents.definitions`` (agent files). The entry point is the class: crab makes one object
per plugin host, which keeps that run's tool and the warnings it has shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import crab

if TYPE_CHECKING:
    from crab import AgentHandle, Config, ConfigTable, Tool

    from crab_subagents.task import TaskRunner

CRAB_API = ">=0.1,<0.2"


class SubagentsPlugin:
    """The ``subagents`` plugin: one per host."""

    CRAB_API = CRAB_API

    def __init__(self) -> None:
        self._runner: TaskRunner | None = None

    @property
    def runner(self) -> TaskRunner:
        if self._runner is None:
            from crab_subagents.task import TaskRunner

            self._runner = TaskRunner()
        return self._runner

    @crab.hookimpl
    def crab_config_table(self) -> ConfigTable:
        """``[plugins.subagents]``: see ``crab_subagents.settings.TABLE``."""
        from crab_subagents.settings import TABLE

        return TABLE

    @crab.hookimpl
    def crab_tools(self, config: Config) -> list[Tool]:
        """``task``: run an agent as a child session on a sub-task."""
        from crab_subagents.settings import PLUGIN, load_settings

        return [self.runner.tool(load_settings(config.plugin_settings(PLUGIN)))]

    @crab.hookimpl
    def crab_startup(self, agent: AgentHandle) -> None:
        """List the agents in the tool's description and warn about broken agent files."""
        self.runner.start(agent)
