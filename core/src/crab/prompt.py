"""Core's part of the system prompt: who the agent is, where it works, and the workspace's AGENTS.md."""

from __future__ import annotations

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
    """The workspace's AGENTS.md (cut at 32 KB), framed as project instructions."""
    path = workspace / AGENTS_FILE
    try:
        data = path.read_bytes()[:MAX_AGENTS_BYTES]
    except OSError:
        return None
    text = data.decode("utf-8", "ignore").strip()
    return f"Project instructions from {AGENTS_FILE}:\n\n{text}" if text else None
