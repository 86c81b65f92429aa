"""Rendered output at a fixed width, compared with snapshots in ``snapshots/``.

Events go in only through the renderer protocol (``handle``/``close``). Run with
``RENDER_RICH_UPDATE=1`` to rewrite the snapshots after a deliberate change, then read the diff.
"""

from __future__ import annotations

import io
import os
from itertools import count
from pathlib import Path

import crab
import pytest
from crab_render_rich.renderer import Preferences, RichRenderer
from crab_render_rich.screen import PipedScreen, TerminalScreen
from rich.console import Console

SNAPSHOTS = Path(__file__).parent / "snapshots"
WIDTH = 72
ANSWER = (
    "# Plan\n\nI will **read** the file and fix `parse()`:\n\n"
    "```python\ndef parse(text):\n    return text.split()\n```\n\n"
    "1. read\n2. fix\n"
)


def events(*, thinking: bool = True) -> list[crab.events.Event]:
    call = crab.messages.ToolCall("c1", "read_file", {"path": "src/app.py", "limit": 20})
    bad = crab.messages.ToolCall("c2", "bash", {"command": "make test"})
    out: list[crab.events.Event] = [crab.events.TurnStarted("s", "t", "fix it")]
    if thinking:
        out += [crab.events.ThinkingDelta("The user wants "), crab.events.ThinkingDelta("a fix.")]
    out += [crab.events.TextDelta(ANSWER[i : i + 7]) for i in range(0, len(ANSWER), 7)]
    out += [
        crab.events.ToolCallEvent(call),
        crab.events.ToolResultEvent(
            "c1", "read_file", "line one\nline two\nline three\nline four\nline five", False, 120
        ),
        crab.events.RetryEvent(1, 3, 2.0, "overloaded (529)"),
        crab.events.ToolCallEvent(bad),
        crab.events.ToolResultEvent("c2", "bash", "exit 2: make: *** No rule to make target 'test'", True, 2300),
        crab.events.UsageEvent(crab.messages.Usage(input_tokens=12_000, output_tokens=800, cost=0.0132)),
        crab.events.TextDelta("Done."),
        crab.events.NoticeEvent("the loop guard saw a repeated call", "warning"),
        crab.events.TurnEnded(
            "s", "t", "end", "Done.", crab.messages.Usage(input_tokens=24_000, output_tokens=1_600, cost=0.0264)
        ),
    ]
    return out


def render(evts: list[crab.events.Event], prefs: Preferences | None = None, **console: object) -> Console:
    file = io.StringIO()
    term = Console(file=file, width=WIDTH, force_terminal=True, color_system="truecolor", record=True, **console)
    target = crab.rendering.RenderTarget(file, file, color=True, model="gpt-test", context_window=128_000)
    ticks = count(0, 3)
    renderer = RichRenderer(target, TerminalScreen(term, live_area=False), prefs or Preferences(), lambda: next(ticks))
    for event in evts:
        renderer.handle(event)
    renderer.close()
    return term


def check(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("RENDER_RICH_UPDATE"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {name}: run with RENDER_RICH_UPDATE=1 and read it"
    assert text == path.read_text(encoding="utf-8")


def test_a_turn_at_72_columns() -> None:
    check("turn-72.txt", render(events()).export_text())


def test_thinking_shown_when_toggled_on() -> None:
    text = render(events(), Preferences(show_thinking=True)).export_text()
    assert "The user wants a fix." in text
    assert "/thinking shows it" not in text
    assert "▸ thought (5 words)" in render(events()).export_text()


def test_code_is_highlighted_and_errors_are_red() -> None:
    term = render(events())
    styled = term.export_text(styles=True)
    assert "\x1b[" in styled
    code_line = next(line for line in styled.splitlines() if "def" in line and "parse" in line)
    assert code_line.count("\x1b[") >= 3  # keyword, name and punctuation styled apart
    error_line = next(line for line in styled.splitlines() if "✗" in line)
    assert "31m" in error_line or "38;2;" in error_line or "91m" in error_line


def test_no_color_keeps_emphasis_but_drops_colour() -> None:
    term = render(events(), no_color=True)
    styled = term.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[1m" in styled  # bold still
    assert "38;" not in styled and "\x1b[31m" not in styled


def test_piped_output_has_no_ansi_and_keeps_the_markdown_source() -> None:
    out, err = io.StringIO(), io.StringIO()
    target = crab.rendering.RenderTarget(out, err, model="gpt-test", context_window=128_000)
    renderer = RichRenderer(target, PipedScreen(out, err), Preferences())
    for event in events():
        renderer.handle(event)
    renderer.close()
    assert "\x1b" not in out.getvalue() + err.getvalue()
    assert out.getvalue() == ANSWER + "Done.\n"
    progress = err.getvalue()
    assert "✓ read_file path=src/app.py limit=20 · 0.1s · 5 lines" in progress
    assert "✗ bash command=make test · 2.3s" in progress
    assert "retrying in 2.0s (attempt 1/3): overloaded (529)" in progress
    assert "gpt-test · 24.0k in · 1.6k out · $0.0264 · context 10% of 128k" in progress


def test_escape_sequences_from_outside_are_shown_not_obeyed() -> None:
    hostile = "\x1b]0;pwned\x07\x1b[2J"
    evts = [
        crab.events.TurnStarted("s", "t", "x"),
        crab.events.TextDelta(f"text {hostile}\n\n"),
        crab.events.ToolCallEvent(crab.messages.ToolCall("c", "read_file", {"path": hostile})),
        crab.events.ToolResultEvent("c", "read_file", hostile, False, 1),
        crab.events.TurnEnded("s", "t", "end"),
    ]
    styled = render(evts).export_text(styles=True)
    assert "\x1b]0;" not in styled and "\x1b[2J" not in styled
    assert "^[]0;pwned^G" in styled


@pytest.mark.parametrize("width", [40, 120])
def test_any_width_renders_every_block_once(width: int) -> None:
    file = io.StringIO()
    term = Console(file=file, width=width, force_terminal=True, record=True)
    target = crab.rendering.RenderTarget(file, file, color=True)
    renderer = RichRenderer(target, TerminalScreen(term, live_area=False), Preferences())
    for event in events(thinking=False):
        renderer.handle(event)
    renderer.close()
    text = term.export_text()
    assert text.count("return text.split()") == 1
    assert text.count("Done.") == 1


def test_the_live_area_runs_on_a_terminal_and_leaves_no_trace() -> None:
    file = io.StringIO()
    term = Console(file=file, width=WIDTH, force_terminal=True, height=20)
    renderer = RichRenderer(crab.rendering.RenderTarget(file, file, color=True), TerminalScreen(term), Preferences())
    for event in events():
        renderer.handle(event)
    renderer.close()
    assert file.getvalue().count("return") >= 1
    assert renderer.screen._live is None  # type: ignore[attr-defined]
