"""The lines crab-temporal prints itself (a worker's log, a command's error): masked, on one line,
and bounded, as every line crab prints (a value in one may come from elsewhere: a session id in a
turn's input, a plugin's error)."""

from __future__ import annotations

import crab

LINE_LIMIT = 1000
"""The most characters of one printed line (crab's own error lines have the same bound)."""


def log_line(text: str) -> str:
    """``text`` masked (every secret crab knows), on one line, cut to ``LINE_LIMIT`` characters."""
    line = " ".join(crab.secrets.Redactor(crab.secrets.known_secrets()).text(text).split())
    return line if len(line) <= LINE_LIMIT else line[: LINE_LIMIT - 1] + "…"
