"""The glob patterns of the ``glob`` and ``grep`` tools, as regular expressions matched in linear time.

``*`` and ``?`` stay within a folder, ``[...]`` is a character class, ``**`` as a whole segment
spans folders (git's wildmatch rules). A model chooses these patterns, so no pattern may make
the regex backtrack for long (``gitignore`` guards repository rules the same way).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def _char_class(pattern: str, i: int) -> tuple[str, int] | None:
    """The regex for the ``[...]`` starting at ``pattern[i]`` and the index after it, or None."""
    n = len(pattern)
    j = i + 1
    negate = j < n and pattern[j] in "!^"
    if negate:
        j += 1
    items: list[str] = []
    first = True
    while j < n and (pattern[j] != "]" or first):
        c = pattern[j]
        if c == "\\" and j + 1 < n:
            j += 1
            c = pattern[j]
            items.append("\\" + c if not c.isalnum() else c)
        else:
            items.append("\\" + c if c in "\\^[]" else c)
        first = False
        j += 1
    if j >= n:
        return None
    # Like git's FNM_PATHNAME: a class never matches the folder separator.
    return ("[^/" if negate else "(?!/)[") + "".join(items) + "]", j + 1


STAR, ANY_FOLDERS, ANY_REST = "[^/]*", "(?:.*/)?", ".*"
"""The variable-length pieces of a glob's regex: ``*``, a ``**/`` segment, a final ``**``."""


def _glob_pieces(pattern: str) -> list[str]:
    """The regex pieces of ``pattern``: ``STAR``, ``ANY_FOLDERS``, ``ANY_REST`` or fixed-length text."""
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                at_start = i == 0 or pattern[i - 1] == "/"
                end = i + 2
                if at_start and end == n:
                    out.append(ANY_REST)
                    i = end
                    continue
                if at_start and pattern.startswith("/", end):
                    out.append(ANY_FOLDERS)
                    i = end + 1
                    continue
                # "**" inside a segment means the same as "*".
                while i < n and pattern[i] == "*":
                    i += 1
                out.append(STAR)
                continue
            out.append(STAR)
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            found = _char_class(pattern, i)
            if found is not None:
                out.append(found[0])
                i = found[1]
                continue
            out.append(re.escape(c))
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return out


def _segment_stars(pieces: list[str]) -> str:
    """Pieces without ``**``: a ``*`` followed by another in the same segment matches up to the
    earliest place the text between them fits, and keeps it (an atomic group). The later ``*``
    can take whatever the earlier one would have, so no match is lost, and several ``*`` in one
    segment no longer backtrack over each other (``*a*a*a*a*c`` on a long name took hours)."""
    out: list[str] = []
    i = 0
    while i < len(pieces):
        if pieces[i] == STAR:
            j = i + 1
            while j < len(pieces) and pieces[j] not in (STAR, "/"):
                j += 1
            if j < len(pieces) and pieces[j] == STAR:
                out.append("(?>[^/]*?" + "".join(pieces[i + 1 : j]) + ")")
                i = j
                continue
        out.append(pieces[i])
        i += 1
    return "".join(out)


def glob_to_regex(pattern: str) -> str:
    """A regex (no anchors) matching a slash-separated path against a gitignore-style glob.

    ``*`` and ``?`` never cross ``/``; ``**`` as a whole segment spans any number of folders.
    The regex never backtracks from one ``*`` (or ``**``) into an earlier one, so matching takes
    linear time whatever a repository's .gitignore or a model's glob says: between two ``**``,
    the folders in between are matched at the first place they fit (the later ``**`` covers
    the rest), likewise between two ``*`` of one segment.
    """
    pieces = _glob_pieces(pattern)
    parts: list[list[str]] = [[]]
    spans: list[str] = []
    for piece in pieces:
        if piece in (ANY_FOLDERS, ANY_REST):
            spans.append(piece)
            parts.append([])
        else:
            parts[-1].append(piece)
    out = [_segment_stars(parts[0])]
    for k, span in enumerate(spans):
        body = _segment_stars(parts[k + 1])
        if k + 1 < len(spans) and span == ANY_FOLDERS:
            out.append("(?>(?:.*?/)??" + body + ")")
        else:
            out.append(span + body)
    return "".join(out)


@dataclass(frozen=True, slots=True)
class PathGlob:
    """A glob from the model: without a ``/`` it matches a file name at any depth, else a path."""

    regex: re.Pattern[str]
    basename_only: bool

    def matches(self, relative: str) -> bool:
        subject = relative.rsplit("/", 1)[-1] if self.basename_only else relative
        return self.regex.match(subject) is not None


def compile_glob(pattern: str) -> PathGlob:
    """The matcher for ``pattern`` (``*.py``, ``src/**/*.ts``, ``docs/*.md``) on relative paths."""
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    basename_only = "/" not in pattern
    return PathGlob(re.compile(glob_to_regex(pattern.lstrip("/")) + r"\Z", re.DOTALL), basename_only)
