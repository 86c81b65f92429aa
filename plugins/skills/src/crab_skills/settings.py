"""The plugin's ``[plugins.skills]`` table and the typed ``Settings`` read from it.

``paths`` and ``project`` decide where instructions for the model come from, so they are
trust-only: an untrusted project's config can neither add folders nor switch its own skills on
against the user's word. The limits only bound what is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crab import ConfigTable, Setting
from crab.config import validate_table

PLUGIN = "skills"
DEFAULT_MAX_LISTED = 64
DEFAULT_MAX_BYTES = 64 * 1024

TABLE = ConfigTable(
    name=PLUGIN,
    doc="Agent Skills (SKILL.md folders) listed in the prompt and loaded on demand",
    settings=(
        Setting(
            "paths",
            "list[str]",
            [],
            "more folders of skills (~ expanded; relative to the workspace); after the user's, before plugins'",
            trust_only=True,
        ),
        Setting(
            "project",
            "bool",
            True,
            "read the project's .crab/skills/ (listed as from the repository; never shadows your own skills "
            "unless the project is trusted)",
            trust_only=True,
        ),
        Setting(
            "commands",
            "bool",
            True,
            "make Markdown files in $CRAB_HOME/commands/, the project's .crab/commands/ and Claude Code's "
            "~/.claude/commands/ and .claude/commands/ slash commands",
            trust_order=(False, True),
        ),
        Setting(
            "max_listed",
            "int",
            DEFAULT_MAX_LISTED,
            "skills named in the system prompt; the rest are listed by the skill tool",
            minimum=0,
            maximum=1000,
        ),
        Setting(
            "max_bytes",
            "int",
            DEFAULT_MAX_BYTES,
            "most bytes read from a SKILL.md or a file beside it",
            minimum=1024,
            maximum=1024 * 1024,
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class Settings:
    """Checked values of ``[plugins.skills]``; relative ``paths`` are resolved against the workspace."""

    paths: tuple[Path, ...] = ()
    project: bool = True
    commands: bool = True
    max_listed: int = DEFAULT_MAX_LISTED
    max_bytes: int = DEFAULT_MAX_BYTES


def load_settings(table: Mapping[str, Any] | None, workspace: Path) -> Settings:
    """``table`` checked against ``TABLE`` (the one-line ``ConfigError`` for a bad value) as ``Settings``."""
    values = validate_table(TABLE, table)
    return Settings(
        paths=tuple(workspace / Path(p).expanduser() for p in values["paths"]),
        project=values["project"],
        commands=values["commands"],
        max_listed=values["max_listed"],
        max_bytes=values["max_bytes"],
    )
