"""The plugin's ``[plugins.checkpoints]`` table and the typed ``Settings`` read from it.

Every key only bounds or narrows what crab-checkpoints keeps (it never widens what crab may do,
and git runs only for its own bookkeeping), so none is trust-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crab import ConfigTable, Setting

PLUGIN = "checkpoints"

TABLE = ConfigTable(
    name=PLUGIN,
    doc="checkpoints before a turn's first change to files, and /undo",
    settings=(
        Setting(
            "before_exec",
            "bool",
            True,
            "also take a checkpoint before a turn's first exec call (bash may change files); in a git work tree only",
        ),
        Setting("keep", "int", 50, "checkpoints kept per session (the oldest go first)", minimum=1, maximum=10_000),
        Setting(
            "max_file_bytes",
            "int",
            10_000_000,
            "outside git: a file larger than this is not copied (its turn cannot be undone)",
            minimum=0,
        ),
        Setting(
            "max_total_bytes",
            "int",
            200_000_000,
            "outside git: bytes of copies kept per session (the oldest checkpoints go first)",
            minimum=0,
        ),
        Setting("git_timeout", "float", 60.0, "seconds one git command may take", minimum=1.0, maximum=3600.0),
    ),
)


@dataclass(frozen=True, slots=True)
class Settings:
    """The checked values of ``[plugins.checkpoints]``."""

    before_exec: bool = True
    keep: int = 50
    max_file_bytes: int = 10_000_000
    max_total_bytes: int = 200_000_000
    git_timeout: float = 60.0


def load_settings(table: Mapping[str, Any]) -> Settings:
    """``Settings`` from ``config.plugin_settings("checkpoints")`` (already checked and filled)."""
    return Settings(
        before_exec=bool(table.get("before_exec", True)),
        keep=int(table.get("keep", 50)),
        max_file_bytes=int(table.get("max_file_bytes", 10_000_000)),
        max_total_bytes=int(table.get("max_total_bytes", 200_000_000)),
        git_timeout=float(table.get("git_timeout", 60.0)),
    )
