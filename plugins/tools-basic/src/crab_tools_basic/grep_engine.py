"""grep's two back-ends, ripgrep and pure Python, and the one output format they share.

Both search the same file list (from ``walk``), treat a file as binary when a NUL byte sits in
its first 8 KB, match line by line, and return the same records; ``format_hits`` alone decides
what the model sees, so the back-end never shows.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crab_tools_basic.text import file_is_binary, looks_binary

MAX_MATCHES = 100
MAX_CONTEXT = 10
ARGV_BUDGET = 100_000
"""Bytes of file names per ripgrep run; well under the kernel's argument limit."""


@dataclass
class FileHits:
    """The matching line numbers of one file and the text of every match and context line."""

    display: str
    matches: list[int] = field(default_factory=list)
    lines: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Target:
    """A file to search: its real path and the name the model sees."""

    path: Path
    display: str


def _lines_of(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def search_text(text: str, regex: re.Pattern[str]) -> list[int]:
    """The 1-based numbers of the lines of ``text`` on which ``regex`` matches (each line alone).

    Searching the whole text first keeps files without a match at C speed; each candidate line
    is then checked on its own, as grep and ripgrep do, so no match spans two lines.
    """
    found: list[int] = []
    position = 0
    size = len(text)
    while position <= size:
        match = regex.search(text, position)
        if match is None:
            break
        start = text.rfind("\n", 0, match.start()) + 1
        if match.start() == size and start == size:
            break
        end = text.find("\n", match.start())
        if end == -1:
            end = size
        line_text = text[start:end]
        if regex.search(line_text) is not None:
            found.append(text.count("\n", 0, start) + 1)
        position = end + 1
    return found


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace").removeprefix("\ufeff")


def python_search(targets: Sequence[Target], regex: re.Pattern[str], context: int) -> list[FileHits]:
    """Search ``targets`` with Python's ``re``; binary and unreadable files are skipped."""
    results: list[FileHits] = []
    for target in targets:
        try:
            data = target.path.read_bytes()
        except OSError:
            continue
        if looks_binary(data):
            continue
        text = _decode(data)
        numbers = search_text(text, regex)
        if not numbers:
            continue
        lines = _lines_of(text)
        hits = FileHits(target.display, numbers)
        for number in numbers:
            for n in range(max(1, number - context), min(len(lines), number + context) + 1):
                hits.lines[n] = lines[n - 1]
        results.append(hits)
    return results


def rg_available() -> str | None:
    return shutil.which("rg")


class RgUnusable(Exception):
    """ripgrep cannot run this search (say, a pattern its regex engine rejects); use Python."""


def _rg_batches(targets: Sequence[Target]) -> list[list[Target]]:
    batches: list[list[Target]] = [[]]
    used = 0
    for target in targets:
        size = len(target.display.encode("utf-8", "surrogateescape")) + 1
        if batches[-1] and used + size > ARGV_BUDGET:
            batches.append([])
            used = 0
        batches[-1].append(target)
        used += size
    return [b for b in batches if b]


def rg_search(
    rg: str, targets: Sequence[Target], pattern: str, ignore_case: bool, context: int, cwd: Path
) -> list[FileHits]:
    """Search ``targets`` with ripgrep (run in ``cwd``, where the display names resolve).

    ripgrep searches everything as text (``--text``); binary files are dropped afterwards by
    the same 8 KB rule the Python back-end uses. Lines over 4 KB come back as a preview, which
    is all the 500-character line cut needs.
    """
    by_name = {t.display: t for t in targets}
    hits: dict[str, FileHits] = {}
    base = [rg, "--no-config", "--text", "--null", "--line-number", "--with-filename", "--no-heading"]
    base += ["--color", "never", "--max-columns", "4096", "--max-columns-preview"]
    if ignore_case:
        base.append("--ignore-case")
    if context:
        base += ["--context", str(context)]
    for batch in _rg_batches(targets):
        args = [*base, "--regexp", pattern, "--", *(t.display for t in batch)]
        done = subprocess.run(args, cwd=cwd, capture_output=True, stdin=subprocess.DEVNULL, check=False)
        if done.returncode == 2 and not done.stdout:
            raise RgUnusable(done.stderr.decode("utf-8", "replace").strip())
        for raw in done.stdout.split(b"\n"):
            name, sep, rest = raw.partition(b"\0")
            if not sep:
                continue
            match = re.match(rb"(\d+)([:-])", rest)
            if match is None:
                continue
            display = name.decode("utf-8", "surrogateescape")
            number = int(match.group(1))
            entry = hits.setdefault(display, FileHits(display))
            text = rest[match.end() :].decode("utf-8", "replace")
            entry.lines[number] = text.removeprefix("\ufeff") if number == 1 else text
            if match.group(2) == b":":
                entry.matches.append(number)
    results: list[FileHits] = []
    for display, entry in hits.items():
        target = by_name.get(display)
        if target is None or not entry.matches:
            continue
        try:
            if file_is_binary(target.path):
                continue
        except OSError:
            continue
        entry.matches.sort()
        results.append(entry)
    return results


def _cut(line: str, limit: int) -> str:
    line = line.removesuffix("\r")
    return line if len(line) <= limit else f"{line[:limit]}… [line cut at {limit} characters]"


def format_hits(
    hits: Sequence[FileHits], context: int, max_matches: int = MAX_MATCHES, max_line: int = 500
) -> tuple[str, int, int]:
    """grep-style lines (``path:12:text``, context ``path-13-text``, ``--`` between groups).

    Files come in path order, lines in number order; only the first ``max_matches`` matches
    are shown. Returns the text, the total number of matching lines and of files with one.
    """
    ordered = sorted(hits, key=lambda h: h.display)
    total = sum(len(h.matches) for h in ordered)
    out: list[str] = []
    shown = 0
    for entry in ordered:
        if shown >= max_matches:
            break
        matches = entry.matches[: max_matches - shown]
        shown += len(matches)
        wanted: set[int] = set()
        for number in matches:
            wanted.update(n for n in range(number - context, number + context + 1) if n in entry.lines)
        matching = set(entry.matches)
        previous: int | None = None
        if context and out:
            out.append("--")
        for number in sorted(wanted):
            if context and previous is not None and number != previous + 1:
                out.append("--")
            kind = ":" if number in matching else "-"
            out.append(f"{entry.display}{kind}{number}{kind}{_cut(entry.lines[number], max_line)}")
            previous = number
    return "\n".join(out), total, len(ordered)
