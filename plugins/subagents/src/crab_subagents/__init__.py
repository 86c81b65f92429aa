"""crab-subagents: a ``task`` tool that runs a child agent, defined in a Markdown agent file, on a sub-task.

Hook implementations only; the work is in ``crab_subagents.task`` (the tool),
``crab_subagents.definitions`` (agent files) and ``crab_subagents.isolation`` (a child's folder of
its own, which other plugins offer through the hook declared here, ``crab_child_workspaces``).
The entry point is the class: crab makes one object per plugin host, which keeps that run's tool
and the warnings it has shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import crab

if TYPE_CHECKING:
    from crab import AgentHandle, Config, ConfigTable, Tool

    from crab_subagents.task import TaskRunner

CRAB_API = ">=0.1,<0.2"


class IsolationHooks:
    """The hook crab-subagents declares: another plugin offers child workspaces without importing it."""

    @crab.hookspec
    def crab_child_workspaces(self, config: Config) -> list[Any] | None:
        """Ways to give a child session a folder of its own, each a ``ChildWorkspaces``
        (``crab_subagents.isolation``: ``name``, ``async enter(workspace, label, session_id) ->
        Path``, ``async leave(folder) -> str``); an agent file's ``isolation: NAME`` picks one.

        crab-subagents collects it (``AgentHandle.collect``) when a ``task`` call runs such an
        agent. Return a list, or None. Not first-result: the first of a name wins. A plugin
        implementing it loads fine without crab-subagents; its implementation is then never called.
        """


class SubagentsPlugin:
    """The ``subagents`` plugin: one per host."""

    CRAB_API = CRAB_API
    CRAB_HOOKSPECS = IsolationHooks

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
