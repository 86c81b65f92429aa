"""A test plugin for crab-checkpoints' terminal test (installed into a site folder by the test).

Provider ``fake`` (model ``script``): crab.testing's scripted provider replaying the JSON file
``$CHECKPOINTS_SCRIPT`` names. Tool ``put`` (write): writes a file in the workspace, with a
preview and a result diff (difflib), so the permission question shows what it would change.
"""

import difflib
import json
import os
from pathlib import Path

import crab
from crab.testing import ScriptedProvider


class FileScripted:
    name = "fake"

    def __init__(self):
        self.engine = None

    def models(self):
        return [crab.ModelInfo(id="script", provider="fake", context_window=200_000)]

    def check(self, model):
        if not Path(os.environ.get("CHECKPOINTS_SCRIPT", "")).is_file():
            raise crab.ConfigError("fake: set CHECKPOINTS_SCRIPT to a script file")

    def stream(self, request):
        if self.engine is None:
            self.engine = ScriptedProvider(json.loads(Path(os.environ["CHECKPOINTS_SCRIPT"]).read_text())["replies"])
        return self.engine.stream(request)


def _diff(path, workspace, content):
    file = Path(workspace) / path
    old = file.read_text() if file.exists() else ""
    lines = difflib.unified_diff(old.splitlines(True), content.splitlines(True), f"a/{path}", f"b/{path}")
    return crab.FileDiff(path, "".join(lines), added=1, removed=1)


def _preview(arguments, ctx):
    return [_diff(arguments["path"], ctx.workspace, arguments["content"])]


@crab.tool(permission="write", preview=_preview)
def put(path: str, content: str, ctx: crab.ToolContext) -> crab.ToolResult:
    """Write a file."""
    diff = _diff(path, ctx.workspace, content)
    (Path(ctx.workspace) / path).write_text(content)
    return crab.ToolResult(f"wrote {path}", diffs=(diff,))


@crab.hookimpl
def crab_providers(config):
    return [FileScripted()]


@crab.hookimpl
def crab_tools(config):
    return [put]
