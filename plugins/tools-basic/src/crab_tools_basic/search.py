"""The ``glob``, ``grep`` and ``ls`` tools: finding files and text without flooding the context."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from crab import ToolContext, ToolError, tool

from crab_tools_basic import grep_engine, grep_worker
from crab_tools_basic.globs import compile_glob
from crab_tools_basic.grep_engine import MAX_CONTEXT, MAX_FILES, MAX_MATCHES, Target
from crab_tools_basic.oserrors import os_errors
from crab_tools_basic.settings import Backend
from crab_tools_basic.text import MAX_LINE_CHARS, cut_line
from crab_tools_basic.walk import list_folder, parent_stack, walk_files
from crab_tools_basic.workspace import Workspace, settings_of, workspace_of

PYTHON_ONLY = re.compile(r"\[\[:|\\Z")
r"""Syntax both engines accept with different meanings (POSIX classes, ``\Z``): Python decides."""
MAX_GLOB_RESULTS = 1000
MAX_LS_ENTRIES = 500


def _folder(ws: Workspace, path: str | None) -> tuple[Path, Path]:
    """The real folder (or file) to search and the root whose .gitignore files apply to it."""
    real = ws.resolve(path or ".")
    if not real.exists():
        raise ToolError(f"{path} does not exist")
    return real, ws.scope_of(real)


def _prefix_length(scope: Path, start: Path) -> int:
    """How much of a scope-relative path names ``start`` (with its slash): globs match the rest."""
    return 0 if start == scope else len(start.relative_to(scope).as_posix()) + 1


def find_files(ws: Workspace, pattern: str, path: str | None = None, stop: threading.Event | None = None) -> str:
    """Files under ``path`` whose path matches ``pattern``, sorted, at most 1,000."""
    if not pattern.strip():
        raise ToolError("pattern is empty: try '*.py' or 'src/**/*.ts'")
    start, scope = _folder(ws, path)
    if not start.is_dir():
        raise ToolError(f"{path} is a file, not a folder")
    matcher = compile_glob(pattern)
    found: list[str] = []
    skip = _prefix_length(scope, start)
    prefix = ws.display_prefix(scope)
    for entry in walk_files(scope, start, stop):
        if matcher.matches(entry.relative[skip:]):
            found.append(prefix + entry.relative)
    if not found:
        return f"no files match {pattern!r} under {ws.display(start)}"
    found.sort()
    lines = [cut_line(name) for name in found[:MAX_GLOB_RESULTS]]
    if len(found) > MAX_GLOB_RESULTS:
        lines.append(f"[showing the first {MAX_GLOB_RESULTS} of {len(found)} files; narrow the pattern or the path]")
    return "\n".join(lines)


def pick_backend(choice: Backend) -> str | None:
    """ripgrep's path when it should be used, else None for the Python back-end."""
    if choice == "python":
        return None
    rg = grep_engine.rg_available()
    if choice == "rg" and rg is None:
        raise ToolError(
            "grep_backend is 'rg' but ripgrep was not found: reinstall crab-tools-basic (it depends on "
            "the ripgrep package) or put rg on PATH"
        )
    return rg


def single_link(path: str) -> bool:
    """False for a regular file with other hard links (its content may belong outside the workspace)."""
    try:
        return os.lstat(path).st_nlink <= 1
    except OSError:
        return False


def search(
    ws: Workspace,
    pattern: str,
    path: str | None = None,
    glob: str | None = None,
    ignore_case: bool = False,
    context: int = 0,
    backend: Backend = "auto",
    stop: threading.Event | None = None,
    allow_hardlinks: bool = True,
    *,
    literal: bool = False,
    files_only: bool = False,
    limit: int | None = None,
) -> str:
    """grep's work, callable without a tool context: regex (or, with ``literal``, plain text)
    search over the visible files; ``files_only`` lists the files with a match instead of the
    lines; ``limit`` lowers how many lines (or files) are shown.

    ``stop`` (the call's ``ctx.cancelled``) ends a long search early when the call is abandoned,
    killing a ripgrep or Python worker process. Without ``allow_hardlinks`` files with more
    than one link are left out.
    """
    if not pattern:
        raise ToolError("pattern is empty")
    if context < 0:
        raise ToolError("context must be 0 or more lines")
    if limit is not None and limit < 1:
        raise ToolError("limit must be 1 or more")
    most = min(limit or MAX_MATCHES, MAX_FILES if files_only else MAX_MATCHES)
    context = 0 if files_only else min(context, MAX_CONTEXT)
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    regex = re.escape(pattern) if literal else pattern
    try:
        # Compiling is safe (no input to backtrack over); only matching runs in the worker.
        re.compile(regex, flags)
    except re.error as exc:
        raise ToolError(
            f"pattern is not a valid regular expression: {exc} (to search for the text as written, set literal)"
        ) from None
    start, scope = _folder(ws, path)
    matcher = compile_glob(glob) if glob else None
    if start.is_file():
        targets = [Target(str(start), ws.display(start))]
    else:
        skip = _prefix_length(scope, start)
        prefix = ws.display_prefix(scope)
        targets = [
            Target(entry.path, prefix + entry.relative)
            for entry in walk_files(scope, start, stop)
            if matcher is None or matcher.matches(entry.relative[skip:])
        ]
    if not allow_hardlinks:
        targets = [t for t in targets if single_link(t.path)]

    def python(chosen: Sequence[Target]) -> list[grep_engine.FileHits]:
        return grep_worker.search_in_worker(chosen, regex, flags, context, stop, allow_hardlinks)

    rg = pick_backend(backend) if literal or not PYTHON_ONLY.search(pattern) else None
    hits = None
    if rg is not None:
        try:
            options = grep_engine.RgOptions(ignore_case, context, literal, first_only=files_only)
            hits = grep_engine.rg_search(rg, targets, pattern, options, str(ws.root), python, stop)
        except grep_engine.RgUnusable:
            # ripgrep's regex dialect lacks look-around and back-references; Python has them.
            hits = None
    if hits is None:
        hits = python(targets)
    where = ws.display(start)
    if not hits:
        return f"no matches for {pattern!r} in {where}"
    if files_only:
        return _file_names(hits, most)
    text, total, files = grep_engine.format_hits(hits, context, most, MAX_LINE_CHARS)
    if total > most:
        text += (
            f"\n[showing the first {most} of {total} matching lines in {files} files; narrow the pattern, path or glob]"
        )
    return text


def _file_names(hits: Sequence[grep_engine.FileHits], most: int) -> str:
    """grep's ``files_only`` answer: the files with a match, sorted, at most ``most``."""
    names = sorted(h.display for h in hits)
    lines = [cut_line(name) for name in names[:most]]
    if len(names) > most:
        lines.append(f"[showing the first {most} of {len(names)} files with a match; narrow the pattern, path or glob]")
    return "\n".join(lines)


def list_entries(ws: Workspace, path: str | None = None) -> str:
    """One folder's entries, folders first marked with ``/``, at most 500."""
    folder, scope = _folder(ws, path)
    if not folder.is_dir():
        raise ToolError(f"{path} is a file, not a folder: use read to see it")
    listing = list_folder(scope, folder, parent_stack(scope, folder))
    names: list[str] = []
    for entry in listing.entries:
        name = os.path.basename(entry.path)
        if entry.is_symlink:
            names.append(f"{name}@ -> {os.readlink(entry.path)}")
        elif entry.is_dir:
            names.append(name + "/")
        else:
            names.append(name)
    names.sort(key=lambda n: (not n.endswith("/"), n))
    lines = [cut_line(n) for n in names[:MAX_LS_ENTRIES]]
    if not lines:
        lines.append("(empty folder)")
    notes: list[str] = []
    if len(names) > MAX_LS_ENTRIES:
        notes.append(f"showing {MAX_LS_ENTRIES} of {len(names)} entries; use glob to narrow")
    if listing.hidden:
        notes.append(f"{listing.hidden} hidden by .gitignore")
    if notes:
        lines.append("[" + "; ".join(notes) + "]")
    return "\n".join(lines)


@tool(output_limit=None)
def glob(
    pattern: Annotated[str, "the glob pattern"],
    ctx: ToolContext,
    path: Annotated[str | None, "folder to search (default: the workspace)"] = None,
) -> str:
    """Find files by name pattern at any depth (`*.py`, `src/**/*.{ts,tsx}`); ls lists one folder instead.

    A pattern without `/` matches file names at any depth; with `/` it matches the path from
    `path`. `*` and `?` stay within a folder, `**` spans folders, `[abc]` is one of the
    characters, `{a,b}` either alternative. Honours .gitignore, skips .git and symlinks;
    lists files only, sorted by path, at most 1,000 (it says when there are more).
    """
    with os_errors("glob failed"):
        return find_files(workspace_of(ctx), pattern, path, ctx.cancelled)


@tool(output_limit=None)
def grep(
    pattern: Annotated[str, "regular expression, or plain text with literal"],
    ctx: ToolContext,
    path: Annotated[str | None, "file or folder to search (default: the workspace)"] = None,
    glob: Annotated[str | None, "only files matching this glob, e.g. '*.py'"] = None,
    ignore_case: Annotated[bool, "match without regard to case"] = False,
    context: Annotated[int, "lines of context around each match (at most 10)"] = 0,
    literal: Annotated[bool, "pattern is plain text: no character in it is special"] = False,
    files_only: Annotated[bool, "list the files with a match (sorted, at most 1,000), not the lines"] = False,
    limit: Annotated[int | None, "most results shown"] = None,
) -> str:
    """Search file contents for a regular expression or plain text; prints `path:line:text` per match.

    Python `re` syntax (look-around and back-references too), matched within each line: escape
    `\\ . * + ? ( ) [ ] { } | ^ $` with `\\` to match them as text, or set `literal`. Honours
    .gitignore, skips .git, symlinks and binary files. Shows at most 100 matching lines (it
    says how many there are in all), each cut at 500 characters.
    """
    settings = settings_of(ctx)
    with os_errors("grep failed"):
        ws = workspace_of(ctx, settings)
        backend = settings.grep_backend
        return search(
            ws,
            pattern,
            path,
            glob,
            ignore_case,
            context,
            backend,
            ctx.cancelled,
            settings.allow_hardlinks,
            literal=literal,
            files_only=files_only,
            limit=limit,
        )


@tool(output_limit=None)
def ls(
    ctx: ToolContext,
    path: Annotated[str | None, "folder to list (default: the workspace)"] = None,
) -> str:
    """List one folder, not its sub-folders' content: sub-folders first (marked `/`), then files.

    Symlinks show as `name@ -> target`. Honours .gitignore (and says how many entries it hid),
    skips .git, at most 500 entries.
    """
    with os_errors("ls failed"):
        return list_entries(workspace_of(ctx), path)
