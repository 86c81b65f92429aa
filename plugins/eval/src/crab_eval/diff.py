"""A compact diff of two tool results: the changed lines with one line of context, bounded."""

from __future__ import annotations

import difflib

MAX_LINES = 12
MAX_WIDTH = 160


def _cut(line: str) -> str:
    return line if len(line) <= MAX_WIDTH else line[: MAX_WIDTH - 1] + "…"


def compact_diff(recorded: str, live: str, max_lines: int = MAX_LINES) -> list[str]:
    """``-``/``+`` lines (``  `` for context) turning ``recorded`` into ``live``; ``…`` when cut."""
    lines: list[str] = []
    for line in difflib.unified_diff(recorded.splitlines(), live.splitlines(), n=1, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            if lines:
                lines.append("…")
            continue
        lines.append(_cut(line[0] + " " + line[1:] if line[:1] in "+-" else "  " + line[1:]))
    if not lines and recorded != live:
        lines = ["(only whitespace at the ends of lines, or the final newline, differs)"]
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"… {len(lines) - max_lines} more diff lines"]
    return lines
