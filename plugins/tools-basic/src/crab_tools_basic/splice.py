"""Literal, all-or-nothing text replacement that leaves every byte outside the edits alone.

Matching happens on the text with CRLF folded to LF, so the model can send what read showed
it; the splice happens on the original text, so mixed line endings, a BOM and bytes that are
not UTF-8 survive. Only the new text takes the file's dominant line ending.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from crab import ToolError

from crab_tools_basic.text import BOM

MAX_LISTED = 5
MAX_DIFF_LINES = 40
MAX_SCAN_LINES = 50_000


@dataclass(frozen=True, slots=True)
class Replacement:
    """Where one edit landed in the new text: its first and last line (1-based)."""

    first_line: int
    last_line: int


@dataclass(frozen=True, slots=True)
class _Folded:
    """Text with CRLF folded to LF, and where the folded newlines sit, to map offsets back."""

    text: str
    crlf_at: list[int]

    def original_offset(self, index: int) -> int:
        # Every CRLF folded before ``index`` is one character longer in the original.
        return index + bisect.bisect_left(self.crlf_at, index)


def fold(text: str) -> _Folded:
    """``text`` with every CRLF as LF, remembering where each fold happened."""
    parts = text.split("\r\n")
    crlf_at: list[int] = []
    position = 0
    for part in parts[:-1]:
        position += len(part)
        crlf_at.append(position)
        position += 1
    return _Folded("\n".join(parts), crlf_at)


def dominant_ending(text: str) -> str:
    """CRLF when most line endings are CRLF, else LF (also for a file with no line ending)."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf > text.count("\n") - crlf else "\n"


def find_all(haystack: str, needle: str) -> list[int]:
    """Every start of ``needle`` in ``haystack``, overlapping ones included."""
    found: list[int] = []
    start = haystack.find(needle)
    while start != -1:
        found.append(start)
        start = haystack.find(needle, start + 1)
    return found


def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def closest_region(text: str, old: str) -> str:
    """A diff between ``old`` and the part of ``text`` that looks most like it, or "" if none."""
    file_lines = text.split("\n")
    if len(file_lines) > MAX_SCAN_LINES:
        return ""
    old_lines = old.split("\n")
    if old_lines and old_lines[-1] == "" and len(old_lines) > 1:
        old_lines.pop()
    size = len(old_lines)
    wanted = {line.strip() for line in old_lines if line.strip()}
    hits = [1 if line.strip() in wanted else 0 for line in file_lines]
    # Rank windows by how many of old's lines they contain, then compare the best few closely.
    windows = range(max(1, len(file_lines) - size + 1))
    score = sum(hits[:size])
    scores = [score]
    for start in windows[1:]:
        score += hits[start + size - 1] - hits[start - 1]
        scores.append(score)
    if max(scores) > 0:
        candidates = sorted(windows, key=lambda i: -scores[i])[:10]
    else:
        # Nothing shared line for line (a typo on a one-liner, say): compare line starts only.
        first = old_lines[0]
        ranked = sorted(windows, key=lambda i: -difflib.SequenceMatcher(None, file_lines[i], first).quick_ratio())
        candidates = ranked[:10]
    target = "\n".join(old_lines)
    best_ratio, best = -1.0, 0
    for start in candidates:
        ratio = difflib.SequenceMatcher(None, "\n".join(file_lines[start : start + size]), target).ratio()
        if ratio > best_ratio:
            best_ratio, best = ratio, start
    if best_ratio < 0.3:
        return ""
    region = file_lines[best : best + size]
    diff = list(
        difflib.unified_diff(
            old_lines, region, "your old text", f"file, lines {best + 1}-{best + len(region)}", lineterm="", n=2
        )
    )
    if len(diff) > MAX_DIFF_LINES:
        diff = [*diff[:MAX_DIFF_LINES], f"… ({len(diff) - MAX_DIFF_LINES} more diff lines)"]
    return "\n".join(diff)


def find_each(haystack: str, needle: str) -> list[int]:
    """Every start of ``needle`` in ``haystack`` from left to right, none overlapping the one
    before (what ``str.replace`` replaces)."""
    found: list[int] = []
    start = haystack.find(needle)
    while start != -1:
        found.append(start)
        start = haystack.find(needle, start + len(needle))
    return found


def _locate(folded: str, number: int, old: str, new: str, replace_all: bool = False) -> list[int]:
    """Where edit ``number``'s ``old`` starts: its one place, or with ``replace_all`` each place."""
    if not old:
        raise ToolError(f"edit {number}: old is empty; give the exact text to replace")
    if old == new:
        raise ToolError(f"edit {number}: old and new are the same; nothing would change")
    starts = find_each(folded, old) if replace_all else find_all(folded, old)
    if not starts:
        message = f"edit {number}: old text not found (matching is exact, including whitespace and indentation)"
        region = closest_region(folded, old)
        if region:
            message += f". The closest region:\n{region}"
        raise ToolError(message + "\nRead the file again and copy the text exactly.")
    if len(starts) > 1 and not replace_all:
        lines = ", ".join(str(line_of(folded, s)) for s in starts[:MAX_LISTED])
        more = f" and {len(starts) - MAX_LISTED} more" if len(starts) > MAX_LISTED else ""
        raise ToolError(
            f"edit {number}: old text matches {len(starts)} times (at lines {lines}{more}); "
            "include more surrounding lines so it matches exactly once, or set replace_all to replace every one"
        )
    return starts


Edit = tuple[str, str] | tuple[str, str, bool]
"""``(old, new)``, or ``(old, new, replace_all)``."""


def apply_edits(original: bytes, edits: Sequence[Edit]) -> tuple[bytes, list[Replacement]]:
    """``original`` with every edit applied, or an ``ToolError`` naming the first problem.

    Each ``old`` must occur exactly once in the original (not in the result of earlier edits),
    or, with ``replace_all``, at least once (each occurrence, left to right, is replaced); no
    two replaced regions may overlap, and at least one byte must change. Returns the new bytes
    and where each replacement landed, in the order the edits were given (an edit's own
    replacements in file order).
    """
    if not edits:
        raise ToolError("no edits given: send edits=[{old, new}, ...]")
    has_bom = original.startswith(BOM)
    text = (
        original[len(BOM) :].decode("utf-8", "surrogateescape")
        if has_bom
        else original.decode("utf-8", "surrogateescape")
    )
    folded = fold(text)
    ending = dominant_ending(text)
    spans: list[tuple[int, int, str, int]] = []
    for number, (old, new, *options) in enumerate(edits, start=1):
        old_lf, new_lf = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
        for start in _locate(folded.text, number, old_lf, new_lf, bool(options and options[0])):
            spans.append((start, start + len(old_lf), new_lf, number))
    spans.sort()
    for (_, end_a, _, number_a), (start_b, _, _, number_b) in itertools.pairwise(spans):
        if start_b < end_a:
            first, second = sorted((number_a, number_b))
            raise ToolError(
                f"edits {first} and {second} overlap (around line {line_of(folded.text, start_b)}); "
                "merge them into one edit"
            )
    pieces: list[str] = []
    landed: list[tuple[int, Replacement]] = []
    cursor = 0
    line_shift = 0
    line, counted = 1, 0  # counted on from the last span: replace_all may make thousands
    for start, end, new, number in spans:
        pieces.append(text[cursor : folded.original_offset(start)])
        pieces.append(new.replace("\n", ending) if ending != "\n" else new)
        cursor = folded.original_offset(end)
        line += folded.text.count("\n", counted, start)
        counted = start
        first = line + line_shift
        landed.append((number, Replacement(first, first + new.count("\n"))))
        line_shift += new.count("\n") - folded.text.count("\n", start, end)
    pieces.append(text[cursor:])
    try:
        body = "".join(pieces).encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise ToolError("new text contains characters that cannot be written as UTF-8") from None
    result = (BOM if has_bom else b"") + body
    if result == original:
        raise ToolError("the edits change nothing")
    return result, [where for _, where in sorted(landed, key=lambda item: item[0])]
