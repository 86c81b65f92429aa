"""Diffs a user sees: the permission question carries what a write would change (``Tool.preview``,
masked like the rest of the question), the plain renderer and the plain question show unified
diffs, and ``-o jsonl`` carries them in the ``tool_result`` event."""

from __future__ import annotations

import io
import json
import time
import types
from pathlib import Path
from typing import Any

import crab
import pytest
from crab._builtin.render_jsonl import JsonlRenderer
from crab._builtin.render_plain import PlainRenderer, diff_lines
from crab._cli.question import QUESTION_DIFF_LINES, question_lines
from crab._contracts.events import FileDiff, ToolResultEvent
from crab._contracts.interception import PermissionRequest
from crab._contracts.renderers import RenderTarget

SECRET = "sk-demo-0123456789abcdef0123"
DIFF = FileDiff("notes.txt", "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-old\n+new\n", "old\n", "new\n", 1, 1)


def _preview(arguments: dict[str, Any], ctx: crab.ToolContext) -> list[FileDiff]:
    unified = f"--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-old\n+{arguments['text']}\n"
    return [FileDiff("notes.txt", unified, added=1, removed=1)]


@crab.tool(permission="write", preview=_preview)
def note(text: str) -> crab.ToolResult:
    """Pretend to write a note."""
    return crab.ToolResult("wrote", diffs=(DIFF,))


def _broken_preview(arguments: dict[str, Any], ctx: crab.ToolContext) -> list[FileDiff]:
    raise RuntimeError("preview exploded")


@crab.tool(permission="write", preview=_broken_preview)
def fragile(text: str) -> str:
    """Pretend to write, with a preview that fails."""
    return "wrote anyway"


def _slow_preview(arguments: dict[str, Any], ctx: crab.ToolContext) -> list[FileDiff]:
    time.sleep(5)
    return [DIFF]


PLUGIN = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [note, fragile]))


def test_the_question_for_a_write_carries_the_diff_it_would_apply(crab_agent) -> None:
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> str:
        asked.append(request)
        return "once"

    h = crab_agent([[{"tool": "note", "args": {"text": "fresh"}}], [{"text": "ok"}]], plugins={"p": PLUGIN}, ask=ask)
    h.run("go")
    (request,) = asked
    (diff,) = request.diffs
    assert "+fresh\n" in diff.unified and diff.path == "notes.txt"
    (result,) = h.events_of(ToolResultEvent)
    assert result.diffs == (DIFF,)


def test_secrets_in_a_previewed_diff_are_masked(crab_agent, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEMO_API_KEY", SECRET)
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> str:
        asked.append(request)
        return "deny"

    h = crab_agent([[{"tool": "note", "args": {"text": SECRET}}], [{"text": "ok"}]], plugins={"p": PLUGIN}, ask=ask)
    h.run("go")
    (diff,) = asked[0].diffs
    assert SECRET not in diff.unified and crab.secrets.REDACTED in diff.unified


def test_a_failing_preview_only_leaves_the_diff_out(crab_agent) -> None:
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> str:
        asked.append(request)
        return "once"

    h = crab_agent([[{"tool": "fragile", "args": {"text": "x"}}], [{"text": "ok"}]], plugins={"p": PLUGIN}, ask=ask)
    h.run("go")
    assert asked[0].diffs == () and asked[0].summary == 'fragile(text="x")'
    assert [e.content for e in h.events_of(ToolResultEvent)] == ["wrote anyway"]


def test_a_slow_preview_is_given_up(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import asyncio

    from crab._contracts import tools

    monkeypatch.setattr(tools, "PREVIEW_TIMEOUT", 0.2)
    slow = crab.tool(permission="write", preview=_slow_preview, description="slow")(lambda text: "x")
    ctx = crab.ToolContext(session_id="s", workspace=tmp_path)
    assert asyncio.run(crab.tools.preview_diffs(slow, {"text": "a"}, ctx)) == ()
    assert not ctx.cancelled.is_set()  # the call itself is not marked cancelled


def test_invalid_arguments_get_no_preview(tmp_path: Path) -> None:
    import asyncio

    ctx = crab.ToolContext(session_id="s", workspace=tmp_path)
    assert asyncio.run(crab.tools.preview_diffs(note, {"text": 3}, ctx)) == ()
    assert asyncio.run(crab.tools.preview_diffs(note, {"text": "y"}, ctx))[0].added == 1


def test_the_plain_question_shows_the_diff_and_folds_a_long_one() -> None:
    request = PermissionRequest("note", "write", 'note(text="new")', (DIFF,))
    lines = question_lines(request, 80)
    assert "  -old" in lines and "  +new" in lines
    assert lines.index("  +new") < next(i for i, line in enumerate(lines) if line.startswith("y Enter"))
    body = "".join(f"+line {i}\n" for i in range(200))
    long = PermissionRequest("note", "write", "note()", (FileDiff("big.txt", "@@ -0,0 +1,200 @@\n" + body),))
    shown = question_lines(long, 80)
    assert f"  … {201 - QUESTION_DIFF_LINES} more lines" in shown
    assert "  +line 199" not in shown


def test_the_plain_renderer_shows_a_unified_diff_coloured_on_a_terminal() -> None:
    err = io.StringIO()
    renderer = PlainRenderer(RenderTarget(io.StringIO(), err, color=True))
    renderer.handle(ToolResultEvent("c1", "edit", "edited notes.txt", diffs=(DIFF,)))
    text = err.getvalue()
    assert "✓ edit: notes.txt +1 -1" in text
    assert "\033[31m    -old\033[0m" in text and "\033[32m    +new\033[0m" in text
    plain = io.StringIO()
    PlainRenderer(RenderTarget(io.StringIO(), plain)).handle(ToolResultEvent("c1", "edit", "ok", diffs=(DIFF,)))
    assert plain.getvalue().splitlines()[1:] == [f"    {line}" for line in DIFF.unified.splitlines()]


def test_diff_lines_show_control_characters_from_a_file() -> None:
    (line,) = diff_lines((FileDiff("a", "+\x1b]0;pwned\x07\n"),))
    assert "\x1b" not in line and "^[" in line


def test_jsonl_carries_the_diffs() -> None:
    out = io.StringIO()
    JsonlRenderer(RenderTarget(out, io.StringIO())).handle(ToolResultEvent("c1", "edit", "ok", diffs=(DIFF,)))
    (event,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert event["diffs"] == [
        {"path": "notes.txt", "unified": DIFF.unified, "before": "old\n", "after": "new\n", "added": 1, "removed": 1}
    ]
