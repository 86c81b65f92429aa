"""How a change to files looks: coloured, compact diffs for tool results and permission questions.

Pure functions of ``crab.events.FileDiff``s: the ``---``/``+++`` headers become one line per file with its
counts, hunks keep their context lines, and a long diff is folded into "… N more lines". Text from
a file has its control characters made visible before it is styled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crab_render_rich.view import key_args, seconds, shorten, visible

if TYPE_CHECKING:
    from crab.events import FileDiff
    from crab.messages import ToolCall
    from rich.text import Text

RESULT_DIFF_LINES = 16
"""Diff lines a tool result shows in the scrollback."""
QUESTION_DIFF_LINES = 40
"""Diff lines a permission question shows (the user is deciding on them)."""
LINE_LIMIT = 200

_ANSI = {"add": "\x1b[32m", "remove": "\x1b[31m", "hunk": "\x1b[36m", "file": "\x1b[1m", "context": "\x1b[2m"}
_RICH = {"add": "green", "remove": "red", "hunk": "cyan", "file": "bold", "context": "dim"}


def counts(diff: FileDiff) -> str:
    """``+3 -1`` (only the parts that are not zero)."""
    return " ".join([*([f"+{diff.added}"] if diff.added else []), *([f"-{diff.removed}"] if diff.removed else [])])


def _kind(line: str) -> str:
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    return "remove" if line.startswith("-") else "context"


def diff_rows(diffs: tuple[FileDiff, ...], limit: int) -> list[tuple[str, str]]:
    """``(kind, text)`` rows: a ``file`` row per diff, then its hunk, added, removed and context
    lines; at most ``limit`` rows of lines, then one ``more`` row saying how many were folded."""
    rows: list[tuple[str, str]] = []
    for diff in diffs:
        rows.append(("file", " ".join(part for part in (visible(diff.path), counts(diff)) if part)))
        for line in diff.unified.splitlines():
            if line.startswith(("--- ", "+++ ")):
                continue
            rows.append((_kind(line), shorten(visible(line), LINE_LIMIT)))
    if len(rows) > limit:
        rows = [*rows[:limit], ("more", f"… {len(rows) - limit} more lines")]
    return rows


def diff_text(diffs: tuple[FileDiff, ...], limit: int = RESULT_DIFF_LINES, indent: str = "  ") -> Text:
    """The rows as rich ``Text``, one per line, each after ``indent``."""
    from rich.text import Text

    text = Text()
    for index, (kind, line) in enumerate(diff_rows(diffs, limit)):
        if index:
            text.append("\n")
        text.append(indent)
        text.append(line, style=_RICH.get(kind, "dim italic"))
    return text


def diff_ansi(diffs: tuple[FileDiff, ...], limit: int = QUESTION_DIFF_LINES, indent: str = "  ") -> list[str]:
    """The rows as ANSI lines (for the question, which the input draws as ANSI text)."""
    return [f"{_ANSI.get(kind, chr(27) + '[2;3m')}{indent}{line}\x1b[0m" for kind, line in diff_rows(diffs, limit)]


def tool_changed(call: ToolCall | None, name: str, diffs: tuple[FileDiff, ...], duration: float) -> Text:
    """``✓ edit path=app.py · 0.1s · +3 -1`` and the compact diff under it."""
    from rich.text import Text

    line = Text("✓ ", style="green")
    line.append(visible(name), style="bold")
    if call is not None:
        args = key_args({k: v for k, v in call.arguments.items() if k in ("path", "file_path")})
        if args:
            line.append(f" {args}", style="dim")
    line.append(f" · {seconds(duration)}", style="dim")
    added, removed = sum(d.added for d in diffs), sum(d.removed for d in diffs)
    line.append(" · ", style="dim")
    line.append(f"+{added}", style="green")
    line.append(" ")
    line.append(f"-{removed}", style="red")
    line.append("\n")
    line.append_text(diff_text(diffs))
    return line
