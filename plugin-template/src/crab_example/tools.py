"""The `word_count` tool and the `/words` command: plain functions that the tests call directly."""

from __future__ import annotations

from pathlib import Path

import crab


def workspace_file(workspace: Path, name: str) -> Path:
    """A file inside the workspace; a path that leaves it (`..`, a symlink out) is refused."""
    root = workspace.resolve()
    path = (root / name).resolve()
    if not path.is_relative_to(root):
        raise crab.ToolError(f"{name} is outside the workspace; give a path inside it")
    if not path.is_file():
        raise crab.ToolError(f"no such file: {name}")
    return path


def count_words(path: Path, max_bytes: int) -> int:
    """The number of whitespace-separated words in a text file of at most `max_bytes` bytes."""
    size = path.stat().st_size
    if size > max_bytes:
        raise crab.ToolError(f"{path.name} has {size} bytes, more than max_bytes ({max_bytes}) in [plugins.example]")
    return len(path.read_text(encoding="utf-8", errors="replace").split())


@crab.tool(permission="read", timeout=10)
def word_count(path: str, ctx: crab.ToolContext) -> str:
    """Count the words in a text file of the workspace.

    Args:
        path: The file, relative to the workspace.
    """
    # A ToolError becomes an error result the model reads; it never ends the turn.
    return str(count_words(workspace_file(ctx.workspace, path), ctx.settings["max_bytes"]))


def words_command(ctx: crab.CommandContext, args: str) -> crab.CommandResult:
    """`/words PATH`: the same count, typed by the user instead of asked for by the model."""
    name = args.strip()
    if not name:
        return crab.CommandResult("usage: /words PATH", is_error=True)
    max_bytes = ctx.handle.config.plugin_settings("example")["max_bytes"]
    try:
        words = count_words(workspace_file(ctx.handle.workspace, name), max_bytes)
    except crab.ToolError as exc:
        return crab.CommandResult(str(exc), is_error=True)
    return crab.CommandResult(f"{name}: {words} words")
