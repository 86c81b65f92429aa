"""The glob patterns of the ``glob`` and ``grep`` tools, as regular expressions matched in linear time.

``*`` and ``?`` stay within a folder, ``[...]`` is a character class, ``**`` as a whole segment
spans folders (git's wildmatch rules), and ``{a,b}`` is either alternative (``*.{ts,tsx}``, as
Claude Code, opencode, ripgrep and bash write it; nested braces too). A model chooses these
patterns, so no pattern may make the regex backtrack for long (``gitignore`` guards repository
rules the same way): braces are expanded into at most ``MAX_ALTERNATIVES`` plain globs, each a
linear-time regex, instead of alternation inside one regex, where an atomic group could commit
to the wrong alternative.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from crab import ToolError

MAX_ALTERNATIVES = 64
"""The most plain globs one pattern's braces may expand to (``{a,b}{c,d}`` is four)."""


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


def _class_end(pattern: str, i: int) -> int | None:
    """The index after the ``[...]`` class starting at ``pattern[i]``, or None when it is not one."""
    found = _char_class(pattern, i)
    return found[1] if found is not None else None


def _brace_pairs(pattern: str) -> dict[int, tuple[int, list[int]]]:
    """For each ``{`` that opens a brace group: its ``}`` and the commas between them at its own
    depth. One pass with a stack (escapes and character classes are skipped, so ``\\{`` and
    ``[{,]`` are plain text); a ``{`` without a ``}`` or without a comma is plain text, as in bash."""
    pairs: dict[int, tuple[int, list[int]]] = {}
    stack: list[tuple[int, list[int]]] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            end = _class_end(pattern, i)
            if end is not None:
                i = end
                continue
        elif c == "{":
            stack.append((i, []))
        elif c == "," and stack:
            stack[-1][1].append(i)
        elif c == "}" and stack:
            start, commas = stack.pop()
            if commas:
                pairs[start] = (i, commas)
        i += 1
    return pairs


def expand_braces(pattern: str, limit: int = MAX_ALTERNATIVES) -> list[str]:
    """The plain globs ``pattern``'s brace groups stand for, in order (``a{b,c}d``: ``abd``, ``acd``).

    Raises ``ToolError`` past ``limit`` globs, before building more of them: sequential groups
    multiply (``{a,b}`` ten times over is 1,024).
    """
    pairs = _brace_pairs(pattern)
    if not pairs:
        return [pattern]

    def span(start: int, end: int) -> list[str]:
        """The expansions of ``pattern[start:end]``."""
        out = [""]
        i = literal = start
        while i < end:
            group = pairs.get(i)
            if group is None:
                i += 2 if pattern[i] == "\\" else 1
                continue
            close, commas = group
            bounds = [i, *commas, close]
            choices: list[str] = []
            for a, b in itertools.pairwise(bounds):
                choices += span(a + 1, b)
                if len(out) * len(choices) > limit:
                    raise ToolError(
                        f"the pattern's braces stand for more than {limit} globs; use fewer alternatives or "
                        "several calls"
                    )
            head = pattern[literal:i]
            out = [o + head + c for o in out for c in choices]
            i = literal = close + 1
        return [o + pattern[literal:end] for o in out]

    return span(0, len(pattern))


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
    """A glob from the model: without a ``/`` it matches a file name at any depth, else a path.

    A pattern with braces may expand to both kinds (``{*.md,docs/**}``): ``names`` matches file
    names, ``paths`` whole relative paths; either may be None.
    """

    names: re.Pattern[str] | None
    paths: re.Pattern[str] | None

    def matches(self, relative: str) -> bool:
        if self.paths is not None and self.paths.match(relative) is not None:
            return True
        return self.names is not None and self.names.match(relative.rsplit("/", 1)[-1]) is not None


def _plain(pattern: str) -> str:
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern


def _either(globs: list[str]) -> re.Pattern[str] | None:
    """One regex matching any of ``globs`` (each alternative anchored at both ends), or None.

    Each alternative is linear and fails or succeeds on its own, so trying them in turn costs
    at most ``MAX_ALTERNATIVES`` linear matches.
    """
    if not globs:
        return None
    return re.compile("|".join(f"(?:{glob_to_regex(g.lstrip('/'))})\\Z" for g in dict.fromkeys(globs)), re.DOTALL)


def compile_glob(pattern: str) -> PathGlob:
    """The matcher for ``pattern`` (``*.py``, ``src/**/*.ts``, ``docs/*.md``, ``*.{ts,tsx}``) on
    relative paths; ``ToolError`` when its braces stand for too many globs."""
    globs = [_plain(g) for g in expand_braces(_plain(pattern))]
    return PathGlob(_either([g for g in globs if "/" not in g]), _either([g for g in globs if "/" in g]))
