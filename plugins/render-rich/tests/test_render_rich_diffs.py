"""Diffs in the rich renderer: a tool result that changed a file shows the change coloured and
compact, a long one folded; the permission question shows the diff its call would apply."""

from __future__ import annotations

import asyncio
import io
from itertools import count

import crab
from crab_render_rich.diff_view import QUESTION_DIFF_LINES, RESULT_DIFF_LINES, diff_rows
from crab_render_rich.question import Question
from crab_render_rich.renderer import Preferences, RichRenderer
from crab_render_rich.screen import TerminalScreen
from rich.console import Console

UNIFIED = "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 20\n c = 3\n"
DIFF = crab.events.FileDiff("app.py", UNIFIED, added=1, removed=1)


def long_diff(lines: int) -> crab.events.FileDiff:
    body = "".join(f"+line {i}\n" for i in range(lines))
    return crab.events.FileDiff("big.py", f"--- /dev/null\n+++ b/big.py\n@@ -0,0 +1,{lines} @@\n{body}", added=lines)


def render(*diffs: crab.events.FileDiff) -> Console:
    file = io.StringIO()
    term = Console(file=file, width=72, force_terminal=True, color_system="truecolor", record=True)
    target = crab.rendering.RenderTarget(file, file, color=True, model="m")
    ticks = count(0, 3)
    renderer = RichRenderer(target, TerminalScreen(term, live_area=False), Preferences(), lambda: next(ticks))
    call = crab.messages.ToolCall("c1", "edit", {"path": "app.py", "edits": [{"old": "b = 2", "new": "b = 20"}]})
    for event in (
        crab.events.TurnStarted("s", "t", "fix"),
        crab.events.ToolCallEvent(call),
        crab.events.ToolResultEvent("c1", "edit", "edited app.py: 1 replacement (line 2)", False, 100, diffs),
        crab.events.TurnEnded("s", "t", "end"),
    ):
        renderer.handle(event)
    renderer.close()
    return term


def test_a_changed_file_is_shown_as_a_coloured_diff() -> None:
    term = render(DIFF)
    text = term.export_text(clear=False)
    assert "✓ edit path=app.py · 0.1s · +1 -1" in text
    lines = text.splitlines()
    start = lines.index("  app.py +1 -1")
    assert lines[start + 1 : start + 6] == ["  @@ -1,3 +1,3 @@", "   a = 1", "  -b = 2", "  +b = 20", "   c = 3"]
    assert "--- a/app.py" not in text  # the file row replaces the headers
    styled = term.export_text(styles=True)
    added = next(line for line in styled.splitlines() if "+b = 20" in line)
    removed = next(line for line in styled.splitlines() if "-b = 2" in line and "+" not in line)
    assert "32m" in added or "38;2;0;128;0" in added or "38;5;2" in added
    assert "31m" in removed or "38;2;128;0;0" in removed or "38;5;1" in removed


def test_a_long_diff_is_folded() -> None:
    text = render(long_diff(100)).export_text()
    assert f"… {100 + 2 - RESULT_DIFF_LINES} more lines" in text  # file row, hunk row and 100 lines
    assert "+line 99" not in text


def test_a_diffs_escape_sequences_are_shown_not_obeyed() -> None:
    hostile = crab.events.FileDiff("x.txt", "@@ -1 +1 @@\n-a\n+\x1b]0;pwned\x07\x1b[2J\n", added=1, removed=1)
    styled = render(hostile).export_text(styles=True)
    assert "\x1b]0;" not in styled and "\x1b[2J" not in styled and "+^[]0;pwned^G^[[2J" in styled


def question(request: crab.PermissionRequest) -> Question:
    loop = asyncio.new_event_loop()
    future: asyncio.Future[crab.Answer] = loop.create_future()
    loop.close()
    return Question(request, future)


def test_the_question_shows_the_diff_it_would_apply_between_the_ask_and_the_keys() -> None:
    shown = question(crab.PermissionRequest("edit", "write", 'edit(path="app.py")', (DIFF,))).ansi(80)
    lines = shown.splitlines()
    ask = next(i for i, line in enumerate(lines) if "? allow write" in line)
    added = next(i for i, line in enumerate(lines) if "+b = 20" in line)
    keys = next(i for i, line in enumerate(lines) if "y Enter: once" in line)
    assert ask < added < keys
    assert lines[added].startswith("\x1b[32m")


def test_a_long_diff_in_the_question_is_folded() -> None:
    rows = diff_rows((long_diff(200),), QUESTION_DIFF_LINES)
    assert rows[-1] == ("more", f"… {202 - QUESTION_DIFF_LINES} more lines")
    shown = question(crab.PermissionRequest("write", "write", "write()", (long_diff(200),))).ansi(80)
    assert "+line 199" not in shown and "more lines" in shown


def test_a_question_without_diffs_is_as_before() -> None:
    shown = question(crab.PermissionRequest("bash", "exec", "bash(command='ls')")).ansi(80)
    assert "@@" not in shown and "\x1b[32m" not in shown


def test_a_diffs_bidirectional_overrides_are_shown_not_obeyed() -> None:
    """A right-to-left override makes a line read other than what is written (Trojan Source)."""
    hostile = crab.events.FileDiff("x.py", '@@ -1 +1 @@\n-a\n+access = "user\u202e \u2066# admin\u2069 \u2066"\n', 1, 1)
    text = render(hostile).export_text()
    assert "\u202e" not in text and "\u2066" not in text and "\u2069" not in text
    assert '+access = "user\\u202e \\u2066# admin\\u2069 \\u2066"' in text
