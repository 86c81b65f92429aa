"""The plugin's ``[plugins.subagents]`` table and the typed ``Settings`` read from it.

``project`` decides whether a repository's agent files are read at all, so it is trust-only: an
untrusted project's config cannot switch its own agents on against the user's word. The other
keys only bound what a run may spend (depth, time, how many agents the tool's description lists).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crab import ConfigTable, Setting

PLUGIN = "subagents"
STATE_DEPTH = "subagents.depth"
"""Session state key: how deep a child session is (a top-level session has none: depth 0)."""
STATE_TOOLS = "subagents.tools"
"""Session state key: the tools a child session was given (a top-level session has none: every tool);
what a task call in it may give a grandchild is within these."""
STATE_READ_ONLY = "subagents.read_only"
"""Session state key: a child session runs read-only, and so does every child it starts."""

TABLE = ConfigTable(
    name=PLUGIN,
    doc="subagents: the task tool runs a child agent (from .crab/agents/ or $CRAB_HOME/agents/) on a sub-task",
    settings=(
        Setting(
            "max_depth",
            "int",
            2,
            "how deep children may nest: 1 lets only the top session start children, 2 lets those start one more level",
            minimum=1,
            maximum=5,
        ),
        Setting(
            "timeout",
            "float",
            900.0,
            "seconds a child may run before its task call is cancelled (every call it started still gets a result)",
            minimum=1.0,
            maximum=86400.0,
        ),
        Setting(
            "max_iterations",
            "int",
            20,
            "model calls a child may make when its agent file names no max_iterations",
            minimum=1,
            maximum=200,
        ),
        Setting(
            "max_listed",
            "int",
            16,
            "agents named in the task tool's description (the rest can still be called by name)",
            minimum=1,
            maximum=200,
        ),
        Setting(
            "project",
            "bool",
            True,
            "read the project's .crab/agents/ (an untrusted project's agents run read-only and never replace yours)",
            trust_only=True,
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class Settings:
    """The checked values of ``[plugins.subagents]``."""

    max_depth: int = 2
    timeout: float = 900.0
    max_iterations: int = 20
    max_listed: int = 16
    project: bool = True


def load_settings(table: Mapping[str, Any]) -> Settings:
    """``Settings`` from the table ``config.plugin_settings("subagents")`` returns (already checked)."""
    return Settings(
        max_depth=int(table.get("max_depth", 2)),
        timeout=float(table.get("timeout", 900.0)),
        max_iterations=int(table.get("max_iterations", 20)),
        max_listed=int(table.get("max_listed", 16)),
        project=bool(table.get("project", True)),
    )
