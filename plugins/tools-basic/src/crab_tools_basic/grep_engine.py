"""grep's two back-ends, ripgrep and pure Python, and the one output format they share.

Both search the same file list (from ``walk``), treat a file as binary when a NUL byte sits in
its first 8 KB, match line by line on the raw text (a BOM is part of line 1, as in GNU grep),
and return the same records; ``format_hits`` alone decides what the model sees. ripgrep (from
the ``ripgrep`` wheel this plugin depends on) matches in linear time; Python's ``re`` can
backtrack for ever, so crab runs it only in a worker process (``grep_worker``) it can kill.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crab import ToolError, processes

from crab_tools_basic.text import SNIFF_BYTES, looks_binary

MAX_MATCHES = 100
"""Matching lines grep shows at most (``limit`` may lower it)."""
MAX_FILES = 1000
"""Files grep's ``files_only`` mode lists at most (as many as glob)."""
MAX_CONTEXT = 10
ARGV_BUDGET = 100_000
"""Bytes of file names per ripgrep run; well under the kernel's argument limit."""


@dataclass
class FileHits:
    """The matching line numbers of one file and the text of every match and context line.

    ripgrep's lines stay bytes until shown: most of a big result is never displayed.
    """

    display: str
    matches: list[int] = field(default_factory=list)
    lines: dict[int, str | bytes] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Target:
    """A file to search: its real path and the name the model sees."""

    path: str
    display: str


def search_text(text: str, regex: re.Pattern[str]) -> list[tuple[int, str]]:
    """(line number, line) for each line of ``text`` on which ``regex`` matches, each line alone.

    Searching the whole text first keeps files without a match at C speed; each candidate line
    is then checked on its own, as grep and ripgrep do, so no match spans two lines.
    """
    found: list[tuple[int, str]] = []
    position = 0
    size = len(text)
    line_number = 1
    counted_to = 0
    while position <= size:
        match = regex.search(text, position)
        if match is None:
            break
        start = text.rfind("\n", 0, match.start()) + 1
        if start == size:
            break  # an empty match after the final newline: there is no line there
        end = text.find("\n", match.start())
        if end == -1:
            end = size
        line = text[start:end]
        if regex.search(line) is not None:
            line_number += text.count("\n", counted_to, start)
            counted_to = start
            found.append((line_number, line))
        position = end + 1
    return found


def caseless_literal(regex: re.Pattern[str]) -> str | None:
    """The lower-cased text of a case-insensitive pattern that is plain ASCII text, else None.

    ``re`` scans slowly with IGNORECASE; for such a pattern on ASCII text, "the lower-cased text
    contains it" is an exact and much faster first test. (Not on non-ASCII text: IGNORECASE
    lets ``s`` match ``ſ``, whose lower case is itself.)
    """
    pattern = regex.pattern
    if not regex.flags & re.IGNORECASE or not pattern.isascii() or re.escape(pattern) != pattern:
        return None
    return pattern.lower()


def python_search(
    targets: Sequence[Target],
    regex: re.Pattern[str],
    context: int,
    stop: threading.Event | None = None,
    allow_hardlinks: bool = True,
) -> list[FileHits]:
    """Search ``targets`` with Python's ``re`` in this process; binary and unreadable files are skipped.

    Only for code that can be killed (``grep_worker``): a pattern can backtrack for ever.
    Ends with ``ToolError`` when ``stop`` is set (the call was aborted or timed out).
    """
    results: list[FileHits] = []
    literal = caseless_literal(regex)
    for target in targets:
        if stop is not None and stop.is_set():
            raise ToolError("cancelled")
        hits = python_search_file(target, regex, context, literal, allow_hardlinks)
        if hits is not None:
            results.append(hits)
    return results


def python_search_file(
    target: Target, regex: re.Pattern[str], context: int, literal: str | None = None, allow_hardlinks: bool = True
) -> FileHits | None:
    try:
        with open(target.path, "rb") as handle:
            # Checked on the open file: a link made after the listing is caught here.
            if not allow_hardlinks and os.fstat(handle.fileno()).st_nlink > 1:
                return None
            data = handle.read()
    except OSError:
        return None
    if looks_binary(data):
        return None
    text = data.decode("utf-8", "replace")
    if literal is not None and text.isascii() and literal not in text.lower():
        return None
    found = search_text(text, regex)
    if not found:
        return None
    hits = FileHits(target.display, [n for n, _ in found], dict(found))
    if context:
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        for number, _ in found:
            for n in range(max(1, number - context), min(len(lines), number + context) + 1):
                hits.lines.setdefault(n, lines[n - 1])
    return hits


def _executable(path: Path) -> str | None:
    try:
        info = path.stat()
    except OSError:
        return None
    if stat.S_ISREG(info.st_mode) and os.access(path, os.X_OK):
        return str(path.resolve())
    return None


@functools.cache
def find_rg() -> str | None:
    """The ripgrep binary: the ``ripgrep`` wheel's, else one in this interpreter's scripts, else PATH.

    The wheel's record names the file wherever pip put it (a venv, ``--user``, ``--target``),
    even when the venv's bin folder is not on PATH.
    """
    import sysconfig
    from importlib import metadata

    name = "rg.exe" if sys.platform == "win32" else "rg"
    try:
        files = metadata.distribution("ripgrep").files or []
    except metadata.PackageNotFoundError:
        files = []
    for entry in files:
        if entry.name == name:
            found = _executable(Path(str(entry.locate())))
            if found:
                return found
    schemes = [sysconfig.get_default_scheme(), f"{os.name}_user"]
    for scheme in schemes:
        try:
            folder = sysconfig.get_path("scripts", scheme)
        except KeyError:
            continue
        found = _executable(Path(folder) / name)
        if found:
            return found
    found = _executable(Path(sys.executable).parent / name)
    return found or shutil.which("rg")


def rg_available() -> str | None:
    return find_rg()


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


_RG_RECORD = re.compile(rb"^([^\0\n]*)\0(\d+)([:-])(.*)$", re.MULTILINE)
_RG_BINARY = re.compile(rb'^(.*): binary file matches \(found "\\0" byte around offset (\d+)\)$', re.MULTILINE)


PythonSearch = Callable[[Sequence[Target]], list[FileHits]]


@dataclass(frozen=True, slots=True)
class RgOptions:
    """How ripgrep searches: ``literal`` text instead of a regex (``--fixed-strings``), and
    ``first_only`` stops at each file's first matching line (grep's ``files_only`` mode)."""

    ignore_case: bool = False
    context: int = 0
    literal: bool = False
    first_only: bool = False


def rg_search(
    rg: str,
    targets: Sequence[Target],
    pattern: str,
    options: RgOptions,
    cwd: str,
    python: PythonSearch,
    stop: threading.Event | None = None,
) -> list[FileHits]:
    """Search ``targets`` with ripgrep (run in ``cwd``, where the display names resolve).

    ripgrep reports a file with a NUL byte as "binary file matches" and the offset of the NUL.
    Below 8 KB that agrees with our rule and the file is dropped; further in, our rule calls
    the file text, so ``python`` searches it (rare: such files are mostly data). Encoding
    detection is off so a UTF-16 file stays binary, as it is for Python. Lines over 4 KB come
    back as a preview, which is all the 500-character cut needs.
    """
    by_name = {t.display: t for t in targets}
    hits: dict[str, FileHits] = {}
    redo: dict[str, bool] = {}
    base = [rg, "--no-config", "--null", "--line-number", "--with-filename", "--no-heading", "--color", "never"]
    base += ["--encoding", "none", "--max-columns", "4096", "--max-columns-preview"]
    if options.ignore_case:
        base.append("--ignore-case")
    if options.context:
        base += ["--context", str(options.context)]
    if options.literal:
        base.append("--fixed-strings")
    if options.first_only:
        base += ["--max-count", "1"]
    for batch in _rg_batches(targets):
        args = [*base, "--regexp", pattern, "--", *(t.display for t in batch)]
        try:
            done = processes.run_bounded(args, stop, cwd=cwd)
        except processes.Stopped:
            raise ToolError("cancelled") from None
        if done.returncode == 2 and not done.stdout:
            raise RgUnusable(done.stderr.decode("utf-8", "replace").strip())
        for name, number, kind, text in _RG_RECORD.findall(done.stdout):
            display = name.decode("utf-8", "surrogateescape")
            entry = hits.get(display)
            if entry is None:
                entry = hits[display] = FileHits(display)
            line = int(number)
            entry.lines[line] = text
            if kind == b":":
                entry.matches.append(line)
        for name, offset in _RG_BINARY.findall(done.stdout):
            redo[name.decode("utf-8", "surrogateescape")] = int(offset) >= SNIFF_BYTES
    again: list[Target] = []
    for display, search_in_python in redo.items():
        hits.pop(display, None)
        target = by_name.get(display)
        if search_in_python and target is not None:
            again.append(target)
    if again:
        hits.update((entry.display, entry) for entry in python(again))
    return [entry for entry in hits.values() if entry.matches]


def _shown(line: str | bytes, limit: int) -> str:
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.removesuffix("\r")
    return text if len(text) <= limit else f"{text[:limit]}… [line cut at {limit} characters]"


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
        matches = sorted(entry.matches)[: max_matches - shown]
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
            out.append(f"{entry.display}{kind}{number}{kind}{_shown(entry.lines[number], max_line)}")
            previous = number
    return "\n".join(out), total, len(ordered)
