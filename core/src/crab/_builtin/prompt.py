"""Core's part of the system prompt: the default prompt (``system_prompt.md``) and the instruction
files (AGENTS.md, CLAUDE.md as fallback) of the user, the repository and the folders down to the
workspace."""

from __future__ import annotations

import functools
import os
import re
import stat
from pathlib import Path

AGENTS_FILE = "AGENTS.md"
FALLBACK_FILE = "CLAUDE.md"
INSTRUCTION_FILES = (AGENTS_FILE, FALLBACK_FILE)
"""Names read in each folder, first found wins."""
MAX_AGENTS_BYTES = 32_000
"""Each instruction file is cut here."""
PROMPT_FILE = Path(__file__).with_name("system_prompt.md")
_SECTION = "<!-- {name} -->\n"
_END = "<!-- /{name} -->\n"
_FIELD = re.compile(r"\{(workspace|date|max_calls)\}")
DATE_LINE = "Session date (UTC): {date}\n"


@functools.cache
def _template() -> str:
    return PROMPT_FILE.read_text(encoding="utf-8")


def _sections(text: str, keep: set[str]) -> str:
    """``text`` with each ``<!-- name -->…<!-- /name -->`` block kept (markers dropped) or removed."""
    for name in ("progressive",):
        start, end = _SECTION.format(name=name), _END.format(name=name)
        while start in text:
            head, _, rest = text.partition(start)
            body, _, tail = rest.partition(end)
            text = head + (body if name in keep else "") + tail
    return text


def session_date(session_id: str) -> str | None:
    """The date the prompt states: the session's own (a function so the snapshot test can fix it)."""
    from crab._loop.steps import session_date as started

    return started(session_id)


def base_prompt(
    workspace: Path, *, tool_view: str = "progressive", date: str | None = None, max_calls: int = 25
) -> str:
    """The default system prompt for ``workspace``: the session's ``date``, the tool protocol, the
    turn's cap of ``max_calls`` model calls (``[crab] max_iterations``), how the progressive tool
    view lists tools (only with that view), what is data and not instructions, how the
    instruction files apply (as ``instruction_files`` finds them) and how to finish a turn. It
    names no plugin's tool: a setup without crab-tools-basic reads it too. It is the start of
    every request's cached prefix, so it holds nothing that changes within a session: the date
    is the one the session started on (``session_date``); a later day is told in a recorded
    ``[crab]`` note (``crab._loop.steps.DATE_NOTE``)."""
    values = {"workspace": str(workspace), "date": date or "", "max_calls": str(max_calls)}
    text = _sections(_template(), {tool_view})
    if date is None:
        text = text.replace(DATE_LINE, "")
    # One pass, so a workspace path holding "{max_calls}" stays as it is.
    return _FIELD.sub(lambda m: values[m.group(1)], text).strip()


def read_instruction_file(path: Path, boundary: Path | None) -> str | None:
    """The text of ``path`` (cut at ``MAX_AGENTS_BYTES``), or None when it is missing, empty, not a
    regular file, or (with a ``boundary``) really lives outside ``boundary``.

    A repository's files are chosen by whoever wrote it: a symlink may point at another file of
    the repository (``AGENTS.md -> CLAUDE.md``), never at the user's own files, and a FIFO or a
    device cannot hang or flood crab (non-blocking open, size cap).
    """
    try:
        real = path.resolve(strict=True)
        if boundary is not None and not real.is_relative_to(boundary.resolve(strict=True)):
            return None
        if not stat.S_ISREG(real.stat().st_mode):
            return None
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None  # swapped for something else since the check
            data = handle.read(MAX_AGENTS_BYTES)
    except (OSError, RuntimeError, ValueError):
        return None
    text = data.decode("utf-8", "ignore").strip()
    return text or None


def repository_root(workspace: Path) -> Path:
    """The nearest folder from ``workspace`` upwards holding ``.git`` (a folder, or a worktree's
    file), else ``workspace`` itself."""
    try:
        start = workspace.resolve()
    except (OSError, RuntimeError):
        return workspace
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def folder_file(folder: Path, boundary: Path | None) -> tuple[Path, str] | None:
    """The first instruction file of ``folder`` that can be read (AGENTS.md, else CLAUDE.md)."""
    for name in INSTRUCTION_FILES:
        text = read_instruction_file(folder / name, boundary)
        if text is not None:
            return folder / name, text
    return None


def instruction_files(workspace: Path, home: Path | None) -> list[tuple[str, str]]:
    """``(label, text)`` of every instruction file, in prompt order: the user's global file in
    ``home`` first, then each folder from the repository root down to ``workspace`` (nearest last).

    The global file is the user's own, so it may be a symlink anywhere; repository files must
    stay inside the repository root.
    """
    found: list[tuple[str, str]] = []
    if home is not None:
        own = folder_file(home, None)
        if own is not None:
            found.append((f"{own[0]} (your global instructions)", own[1]))
    root = repository_root(workspace)
    try:
        here = workspace.resolve()
    except (OSError, RuntimeError):
        return found
    folders = [root]
    if here != root and here.is_relative_to(root):
        folders.extend(reversed([p for p in here.parents if p.is_relative_to(root) and p != root]))
        folders.append(here)
    for folder in folders:
        if home is not None and _same(folder, home):
            continue  # already read as the global file
        hit = folder_file(folder, root)
        if hit is not None:
            label = hit[0].relative_to(root).as_posix()
            found.append((label, hit[1]))
    return found


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):
        return False


def instruction_parts(workspace: Path, home: Path | None) -> list[str]:
    """Each instruction file framed for the system prompt."""
    return [f"Instructions from {label}:\n\n{text}" for label, text in instruction_files(workspace, home)]
