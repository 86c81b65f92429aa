"""Core's part of the system prompt: who the agent is, where it works, and the workspace's AGENTS.md."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

AGENTS_FILE = "AGENTS.md"
MAX_AGENTS_BYTES = 32_000

BASE_PROMPT = """You are crab, an agent that helps the user with tasks in their workspace.
Workspace: {workspace}
Today: {today}
Use the tools you are given to look things up and to act; do not guess at file contents.
Keep answers short and say plainly what you did and what you did not do."""


def base_prompt(workspace: Path) -> str:
    return BASE_PROMPT.format(workspace=workspace, today=time.strftime("%Y-%m-%d"))


def agents_file(workspace: Path) -> str | None:
    """The workspace's AGENTS.md (cut at 32 KB), framed as project instructions.

    A repository chooses this file, so it is read only when it is a regular file inside the
    workspace: a symlink may point at another file of the workspace (``AGENTS.md -> CLAUDE.md``),
    not at the user's own files, and a FIFO or a device cannot hang or flood crab.
    """
    path = workspace / AGENTS_FILE
    try:
        real = path.resolve(strict=True)
        root = workspace.resolve(strict=True)
        if not real.is_relative_to(root) or not stat.S_ISREG(real.stat().st_mode):
            return None
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None  # swapped for something else since the check
            data = handle.read(MAX_AGENTS_BYTES)
    except (OSError, RuntimeError):
        return None
    text = data.decode("utf-8", "ignore").strip()
    return f"Project instructions from {AGENTS_FILE}:\n\n{text}" if text else None
