"""crab-worktree's ``[plugins.worktree]`` table."""

from __future__ import annotations

import crab

TABLE = crab.ConfigTable(
    "worktree",
    (
        crab.Setting("enabled", "bool", False, "every run in a fresh worktree, as --worktree does"),
        crab.Setting("name", "str", "", "the worktree's name when --worktree gives none (default: date and time)"),
        crab.Setting(
            "folder",
            "str",
            ".crab/worktrees",
            "where worktrees are made, relative to the repository's top folder",
            trust_only=True,
        ),
        crab.Setting(
            "branch_prefix",
            "str",
            "crab/",
            "each worktree's branch is this prefix and its name (and /worktrees lists those)",
            trust_only=True,  # which branches of your repository crab makes, and may delete when unchanged
        ),
    ),
    doc="crab-worktree: sessions in git worktrees of their own",
)
