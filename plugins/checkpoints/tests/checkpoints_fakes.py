"""A test plugin for crab-checkpoints' terminal test (installed by the test into the
``ScriptedSite`` whose provider ``fake`` replays the script).

Tool ``put`` (write): writes a file in the workspace, with a
preview and a result diff (difflib), so the permission question shows what it would change.
"""

import difflib
from pathlib import Path

import crab


def _diff(path, workspace, content):
    file = Path(workspace) / path
    old = file.read_text() if file.exists() else ""
    lines = difflib.unified_diff(old.splitlines(True), content.splitlines(True), f"a/{path}", f"b/{path}")
    return crab.events.FileDiff(path, "".join(lines), added=1, removed=1)


def _preview(arguments, ctx):
    return [_diff(arguments["path"], ctx.workspace, arguments["content"])]


@crab.tool(permission="write", preview=_preview)
def put(path: str, content: str, ctx: crab.ToolContext) -> crab.ToolResult:
    """Write a file."""
    diff = _diff(path, ctx.workspace, content)
    (Path(ctx.workspace) / path).write_text(content)
    return crab.ToolResult(f"wrote {path}", diffs=(diff,))


@crab.hookimpl
def crab_tools(config):
    return [put]
