"""Which paths a .gitignore-style file hides: the file read safely, its rules compiled with pathspec.

pathspec parses the lines (negation, anchoring, ``**``, folder-only rules, escapes, trailing
spaces) into one regex per rule. The walk asks about each entry in turn, never entering an
ignored folder, so ``IgnoreFile.decide`` takes the last rule that matches the entry itself
(``_matches_itself``) rather than ``GitIgnoreSpec``'s verdict on a whole path. What else is
crab's own was found by the differential test against git (tests/test_tools_basic_gitignore_vs_git.py):

- Linear time. pathspec turns each ``*`` into ``[^/]*`` and each inner ``**`` into
  ``(?:/.+)?`` for Python's backtracking ``re``: ``*a*a*a*a*a*a*a*a*a*a*a*a*c`` took 0.34 s
  against a name of 26 characters, twice that per added one (``bench/gitignore.py``), and a
  cloned repository chooses its .gitignore. So
  ``_LinearPattern`` matches the text between two ``*`` of one segment, and the folders
  between two ``**``, where they first fit, in an atomic group (the later wildcard takes the
  rest, so no match is lost) -- the rule ``globs`` keeps for the model's patterns.
- git's exact line rules where pathspec differs: only spaces are trailing whitespace (a tab
  is part of the name), a class such as ``[!a]`` never matches ``/``, a final ``/**`` matches
  only inside its folder (``_inside_only``), and a line pathspec rejects (a lone trailing
  ``\\``) matches nothing instead of failing the whole file.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec
from pathspec.patterns.gitignore import GitIgnorePatternError
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

MAX_RULES_BYTES = 1024 * 1024
"""The most of one ignore file read: git's own limit is far above any real file, crab's memory is not."""

_STAR = "[^/]*"
_INNER_FOLDERS = "(?:/.+)?"
_LEADING_FOLDERS = "^(?:.+/)?"


def _atomic_stars(segment: str) -> str:
    """A segment's regex with every ``*`` but the last matched to the first fit of what follows it."""
    pieces = segment.split(_STAR)
    if len(pieces) <= 2:
        return segment
    middle = "".join(f"(?>{_STAR}?{piece})" for piece in pieces[1:-1])
    return pieces[0] + middle + _STAR + pieces[-1]


def _atomic_folders(regex: str) -> str:
    """``regex`` with every ``**`` that another ``**`` follows matched to the first folder that fits.

    ``(?=/)`` keeps the group to whole segments: what follows it always starts with ``/``.
    """
    head = ""
    body = regex
    if body.startswith(_LEADING_FOLDERS) and _INNER_FOLDERS in body:
        first, _, rest = body[len(_LEADING_FOLDERS) :].partition(_INNER_FOLDERS)
        head = f"^(?>(?:.+?/)??{first}(?=/))"
        body = _INNER_FOLDERS + rest
    spans = body.split(_INNER_FOLDERS)
    if len(spans) <= 2:
        return head + body
    out = [spans[0]]
    out.extend(f"(?>(?:/.+?)??{between}(?=/))" for between in spans[1:-1])
    out.append(_INNER_FOLDERS + spans[-1])
    return head + "".join(out)


class _LinearPattern(GitIgnoreSpecPattern):
    """pathspec's gitignore pattern, its regex rewritten so that matching takes linear time."""

    __slots__ = ()

    @staticmethod
    def _translate_segment_glob(pattern: str, range_error: str) -> str:
        segment = GitIgnoreSpecPattern._translate_segment_glob(pattern, range_error)  # type: ignore[arg-type]
        return _atomic_stars(_no_slash_classes(segment))

    @classmethod
    def pattern_to_regex(cls, pattern: str) -> tuple[str | None, bool | None]:  # type: ignore[override]
        regex, include = super().pattern_to_regex(pattern)
        if regex is None:
            return None, include
        return _atomic_folders(_inside_only(pattern, regex)), include


_DIR_MARK = "(?P<ps_d>/)"


def _inside_only(pattern: str, regex: str) -> str:
    """A final ``/**`` matching only what is inside the folder before it, as in git.

    pathspec's ``foo/**`` matches ``foo/`` itself, and its ``a/**/b/**/`` matches ``a/b/`` and the
    files directly in it, where git hides only the folders below ``a/**/b``.
    """
    body = pattern.removeprefix("!")
    folders_only = body.endswith("/")
    body = body.removesuffix("/")
    if not body.endswith("/**") or not body.strip("/*"):
        return regex
    if folders_only and regex.endswith(_DIR_MARK):
        return regex[: -len(_DIR_MARK)] + "/.+" + _DIR_MARK
    if not folders_only and regex.endswith("/"):
        return regex + "."
    return regex


def _no_slash_classes(segment: str) -> str:
    """A segment's regex with each negated class kept off ``/``, like git's FNM_PATHNAME.

    pathspec writes ``[!a]`` as ``[^a]``, which matches ``/``: ``a[!x]b`` would hide ``a/b``.
    Outside a class pathspec escapes every ``[`` it did not write; inside one, ``\\`` pairs.
    """
    out: list[str] = []
    i, n = 0, len(segment)
    while i < n:
        c = segment[i]
        if c == "\\":
            out.append(segment[i : i + 2])
            i += 2
            continue
        if c != "[":
            out.append(c)
            i += 1
            continue
        j = i + 1
        negated = segment.startswith("^", j)
        j += negated
        if segment.startswith("]", j):
            j += 1
        while j < n and segment[j] != "]":
            j += 2 if segment[j] == "\\" else 1
        body = segment[i + 1 + negated : j]
        out.append("[^" + ("" if body.startswith("/") else "/") + body + "]" if negated else "[" + body + "]")
        i = j + 1
    return "".join(out)


def _odd_backslashes(text: str) -> bool:
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


def _git_line(line: str) -> str:
    """One line as git reads it, written so that pathspec reads it the same way.

    git drops trailing spaces unless the last is escaped with ``\\``, and nothing else: a
    trailing tab is part of the name. pathspec strips all trailing whitespace, so a kept
    tab goes to it as the class ``[\t]``.
    """
    stripped = line.rstrip(" ")
    if len(stripped) < len(line) and _odd_backslashes(stripped):
        stripped += " "
    elif stripped and stripped[-1].isspace() and stripped[-1] != " ":
        head, last = stripped[:-1], stripped[-1]
        if _odd_backslashes(head):
            head = head[:-1]
        stripped = f"{head}[{last}]"
    return stripped


def compile_rules(lines: Iterable[str]) -> GitIgnoreSpec | None:
    """The rules of a .gitignore's lines, or None when no line is a rule."""
    patterns: list[_LinearPattern] = []
    for line in lines:
        try:
            pattern = _LinearPattern(_git_line(line))
        except GitIgnorePatternError:
            continue  # git's wildmatch never matches such a line either
        if pattern.include is not None:
            patterns.append(pattern)
    return GitIgnoreSpec(patterns) if patterns else None


def read_rules_file(path: Path, follow_symlinks: bool = False) -> str | None:
    """The text of an ignore file, or None when it is missing, unreadable or not a regular file.

    As for git, a repository's symlinked .gitignore is not followed (a cloned one linked to
    ``/dev/zero`` would be read for ever, a FIFO would wait for ever); the user's own excludes
    file may be a link (dotfile managers make them), but must lead to a regular file.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            data = handle.read(MAX_RULES_BYTES)
        except OSError:
            return None
    return data.decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class IgnoreFile:
    """The rules of one ignore file and where they apply.

    ``base`` is the folder (relative to the walk's scope, posix, "" for the scope) the rules
    cover; ``prefix`` is what a path relative to ``base`` needs in front to be relative to the
    folder the rules are anchored at (a repository's top, when the scope lies inside it).
    """

    base: str
    spec: GitIgnoreSpec
    prefix: str = ""
    screen: re.Pattern[str] | None = None
    """All the rules in one regex: most paths match none, and one search says so (``screen``)."""

    def decide(self, relative: str, is_dir: bool) -> bool | None:
        """True (ignored), False (re-included by a ``!`` rule) or None (no rule matches).

        ``relative`` is the path from the walk's scope; the last matching rule wins, as in git.
        """
        if self.base:
            if not relative.startswith(self.base + "/"):
                return None
            relative = relative[len(self.base) + 1 :]
        subject = self.prefix + relative + ("/" if is_dir else "")
        if self.screen is not None and self.screen.match(subject) is None:
            return None
        for pattern in reversed(self.spec.patterns):
            regex = pattern.regex
            if regex is not None and _matches_itself(regex, subject, is_dir):
                return bool(pattern.include)
        return None


def _matches_itself(regex: re.Pattern[str], subject: str, is_dir: bool) -> bool:
    """Whether a rule matches the path itself, not only a folder above it.

    pathspec's rules also match every path below a folder they match (its ``GitIgnoreSpec``
    decides whole paths); the walk never enters an ignored folder and asks about each entry in
    turn, so a match that ends at a folder above is no verdict on the entry: with ``*.log`` in
    the root and ``!*/`` in ``docs/``, ``docs/api/keep.log`` stays ignored, as in git.
    """
    if regex.pattern == _DIR_MARK:  # "*/" and "**/": any folder
        return is_dir
    match = regex.search(subject)
    if match is None:
        return False
    if "ps_d" not in regex.groupindex:
        return True
    at = match.start("ps_d")
    return at == -1 or at == len(subject) - 1


def load_ignore_file(path: Path, base: str, prefix: str = "", follow_symlinks: bool = False) -> IgnoreFile | None:
    """The rules in ``path``, or None when it is missing, unreadable, not a regular file or has none."""
    text = read_rules_file(path, follow_symlinks)
    if text is None:
        return None
    spec = compile_rules(re.split(r"\r?\n", text))
    return IgnoreFile(base, spec, prefix, screen(spec)) if spec is not None else None


def screen(spec: GitIgnoreSpec) -> re.Pattern[str]:
    """One regex that matches wherever some rule of ``spec`` does (pathspec searches each in turn).

    Most paths match no rule, and one match says so: pathspec alone tries every rule on every
    path, in Python. A rule for a name at any depth (``^(?:.+/)?NAME`` and a tail) goes into
    one shared ``(?:.+/)?(?:NAME|...)``, so the folders of a path are walked once, not per rule.
    """
    names: list[str] = []
    others: list[str] = []
    for pattern in spec.patterns:
        regex: str = pattern.regex.pattern  # type: ignore[union-attr]
        regex = regex.replace(_DIR_MARK, "/")
        if regex.startswith(_LEADING_FOLDERS) and regex.endswith(("(?:/|$)", "/")):
            names.append(regex[len(_LEADING_FOLDERS) :])
        elif regex.startswith("^"):
            others.append(regex[1:])
        else:
            others.append(f"(?s:.*?){regex}")  # pathspec searches; the screen matches
    if names:
        others.append("(?:.+/)?(?:" + "|".join(f"(?:{n})" for n in names) + ")")
    return re.compile("|".join(f"(?:{a})" for a in others))


def is_ignored(stack: list[IgnoreFile], relative: str, is_dir: bool) -> bool:
    """Whether the deepest deciding file in ``stack`` (least precedence first) ignores the path."""
    for ignore in reversed(stack):
        verdict = ignore.decide(relative, is_dir)
        if verdict is not None:
            return verdict
    return False
