"""What ``edit`` and ``write`` changed (or would change) in a file, as a ``crab.events.FileDiff``.

The unified diff keeps a few context lines and at most ``MAX_DIFF_LINES`` lines (the counts are
of the whole change); the whole texts ride along only when both are small. Bytes that are not
UTF-8 are shown replaced; a file that looks binary gets a one-line note instead of a diff.
"""

from __future__ import annotations

import difflib

from crab.events import FileDiff

from crab_tools_basic.text import BOM, looks_binary

CONTEXT_LINES = 3
MAX_DIFF_LINES = 400
"""Lines of unified diff kept; a longer one ends with a line saying how many were left out."""
MAX_WHOLE_CHARS = 16_000
"""``before``/``after`` are kept only when each is at most this long."""
MAX_DIFF_INPUT = 2_000_000
"""Bytes beyond which no line diff is computed (difflib is quadratic at worst): a note instead."""


def _text(data: bytes) -> str:
    return data.removeprefix(BOM).decode("utf-8", "replace").replace("\r\n", "\n")


def file_diff(display: str, before: bytes | None, after: bytes) -> FileDiff:
    """The change from ``before`` (None: the file did not exist) to ``after`` of the file ``display``."""
    if (before is not None and looks_binary(before[:8192])) or looks_binary(after[:8192]):
        note = f"Binary file {display} {'changed' if before is not None else 'created'}\n"
        return FileDiff(display, note)
    if (len(before or b"") + len(after)) > MAX_DIFF_INPUT:
        return too_large(display, None if before is None else len(before), len(after))
    old = _text(before) if before is not None else ""
    new = _text(after)
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    lines = list(
        difflib.unified_diff(
            old_lines,
            new_lines,
            f"a/{display}" if before is not None else "/dev/null",
            f"b/{display}",
            n=CONTEXT_LINES,
        )
    )
    added = sum(1 for line in lines[2:] if line.startswith("+"))
    removed = sum(1 for line in lines[2:] if line.startswith("-"))
    shown = [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines]
    if len(shown) > MAX_DIFF_LINES:
        shown = [*shown[:MAX_DIFF_LINES], f"… {len(lines) - MAX_DIFF_LINES} more diff lines\n"]
    small = len(old) <= MAX_WHOLE_CHARS and len(new) <= MAX_WHOLE_CHARS
    return FileDiff(
        display,
        "".join(shown),
        before=old if small and before is not None else None,
        after=new if small else None,
        added=added,
        removed=removed,
    )


def too_large(display: str, before: int | None, after: int | None) -> FileDiff:
    """The note for a change too large to diff, from the sizes in bytes (None: no such file, or
    not known: a preview knows an edit's result only by reading the whole file)."""
    sizes = [size for size in (before, after) if size is not None]
    return FileDiff(display, f"{display}: too large to diff ({' → '.join(map(str, sizes))} bytes)\n")
