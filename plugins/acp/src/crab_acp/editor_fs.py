"""``read``, ``write`` and ``edit`` through the editor (``fs/read_text_file``, ``fs/write_text_file``).

Offered (with ``override=True``, in place of crab-tools-basic's tools of those names) when the
client says it can read or write text files: the model then sees unsaved buffers, and its
changes land in the editor, which shows them and keeps its undo history. What the client does
not offer crab does on disk itself (``disk_read``, ``disk_write``): a client that writes but does
not read still gets every change, and one that reads but does not write gets them on disk, with
one read gate for both halves (crab-tools-basic's would not know of reads made here). The rules are crab's:
a path must stay inside the workspace (symlinks resolved), an existing file is changed only
after a read in this session and if it is unchanged since (the read gate), every edit is checked
before anything is written, and each change comes back with its ``crab.events.FileDiff``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import hashlib
import itertools
import os
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import crab

READ_LINES = 2000
READ_BYTES = 50_000
WHOLE_TEXT = 200_000
"""Texts up to this many characters go into a diff whole (``before``/``after``), for the editor's review."""
STATE_KEY = "crab-acp.read"
WRITTEN_KEY = "crab-acp.written"
"""``ToolContext.state`` key: path → (the disk's digest then, the text) of each write through an
editor that does not offer reads (``editor_file_tools``)."""

Reader = Callable[[str, str], Awaitable[str]]
Writer = Callable[[str, str, str], Awaitable[None]]


class Edit(TypedDict, total=False):
    """One replacement: ``old`` is the exact current text, ``new`` what replaces it."""

    old: Annotated[str, "the exact text to replace, copied from what read showed (without line numbers)"]
    new: Annotated[str, "the complete text that replaces it; empty to delete it"]
    replace_all: Annotated[bool, "replace every occurrence of old (default: old must occur exactly once)"]


def inside(workspace: Path, path: str) -> tuple[Path, str]:
    """The real path of ``path`` (relative to ``workspace``) and how to show it; a ``ToolError``
    when it leaves the workspace (through ``..``, an absolute path or a symlink)."""
    root = Path(os.path.realpath(workspace))
    real = Path(os.path.realpath(root / os.path.expanduser(path)))
    if real != root and root not in real.parents:
        raise crab.ToolError(f"{path} is outside the workspace ({root}); crab reads and changes files only inside it")
    return real, real.relative_to(root).as_posix() if real != root else "."


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _disk_digest(real: Path) -> str | None:
    """The sha256 of the file's bytes on disk, or None when there is no file."""
    try:
        return hashlib.sha256(real.read_bytes()).hexdigest()
    except OSError:
        return None


def numbered(text: str, offset: int, limit: int | None) -> str:
    """Lines ``offset``.. of ``text`` after their numbers and a tab, within the read budget."""
    lines = text.splitlines()
    start = max(offset, 1)
    most = min(limit or READ_LINES, READ_LINES)
    shown: list[str] = []
    size = 0
    end = start - 1
    for number in range(start, min(len(lines), start - 1 + most) + 1):
        line = f"{number:>6}\t{lines[number - 1]}"
        size += len(line.encode("utf-8", "replace")) + 1
        if size > READ_BYTES and shown:
            break
        shown.append(line)
        end = number
    if not lines:
        return "(empty file)"
    if start > len(lines):
        return f"(the file has {len(lines)} lines; offset {start} is past its end)"
    body = "\n".join(shown)
    if end < len(lines):
        body += f"\n[lines {start}-{end} of {len(lines)} shown; read on with offset={end + 1}]"
    return body


def file_diff(display: str, before: str | None, after: str) -> crab.events.FileDiff:
    old = (before or "").splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    lines = list(difflib.unified_diff(old, new, f"a/{display}", f"b/{display}", n=3))
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    small = len(after) <= WHOLE_TEXT and len(before or "") <= WHOLE_TEXT
    return crab.events.FileDiff(
        path=display,
        unified="".join(line if line.endswith("\n") else line + "\n" for line in lines),
        before=before if small else None,
        after=after if small else None,
        added=added,
        removed=removed,
    )


def replace_all(text: str, edits: list[Edit]) -> str:
    """``text`` with every edit applied, each checked against the original text; a ``ToolError``
    for the first that cannot apply."""
    spans: list[tuple[int, int, str]] = []
    crlf = "\r\n" in text
    for number, item in enumerate(edits, 1):
        old, new = item.get("old", ""), item.get("new", "")
        if not isinstance(old, str) or not isinstance(new, str) or not old:
            raise crab.ToolError(f"edit {number}: old must be non-empty text and new text")
        if old == new:
            raise crab.ToolError(f"edit {number}: new is the same as old; nothing would change")
        if old not in text and crlf and old.replace("\r\n", "\n").replace("\n", "\r\n") in text:
            old, new = old.replace("\r\n", "\n").replace("\n", "\r\n"), new.replace("\r\n", "\n").replace("\n", "\r\n")
        count = text.count(old)
        if count == 0:
            raise crab.ToolError(
                f"edit {number}: old was not found in the file; read it again and copy the text exactly"
            )
        if count > 1 and not item.get("replace_all", False):
            raise crab.ToolError(
                f"edit {number}: old occurs {count} times; add surrounding lines to make it unique, or set replace_all"
            )
        start = 0
        while (found := text.find(old, start)) != -1:
            spans.append((found, found + len(old), new))
            start = found + len(old)
            if not item.get("replace_all", False):
                break
    spans.sort()
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        if start < end:
            raise crab.ToolError("two edits overlap; merge them into one")
    out, last = [], 0
    for start, end, new in spans:
        out.append(text[last:start])
        out.append(new)
        last = end
    out.append(text[last:])
    return "".join(out)


def _prepare_edit(args: dict[str, Any]) -> dict[str, Any]:
    """Accept ``file_path`` for ``path`` and a top-level old/new pair, as models send them."""
    args = dict(args)
    for alias in ("file_path", "filePath", "file"):
        if "path" not in args and alias in args:
            args["path"] = args.pop(alias)
    if "edits" not in args and "old" in args:
        item = {"old": args.pop("old"), "new": args.pop("new", "")}
        if "replace_all" in args:
            item["replace_all"] = args.pop("replace_all")
        args["edits"] = [item]
    return args


async def disk_read(session_id: str, path: str) -> str:
    """A file's text from disk, for a client that does not offer ``fs/read_text_file``."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise crab.ToolError(f"{path} is not UTF-8 text; crab's editor tools read text files only") from None


async def disk_write(session_id: str, path: str, text: str) -> None:
    """``text`` into the file on disk, for a client that does not offer ``fs/write_text_file``:
    whole or not at all (a temporary file renamed over it), keeping an existing file's mode."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".crab")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def editor_file_tools(read_file: Reader | None, write_file: Writer | None) -> list[crab.Tool]:
    """The three tools, reading with ``read_file(session, path)``, writing with
    ``write_file(session, path, text)``; None for either means on disk (``disk_read``, ``disk_write``)."""
    where = "in the editor" if write_file is not None else "on disk"
    reader: Reader = read_file or disk_read
    writer: Writer = write_file or disk_write

    # A client that writes but does not read may keep what it was given in an unsaved buffer:
    # until the disk changes, that text (not the disk's) is the file (``unsaved``).
    blind = read_file is None and write_file is not None

    def unsaved(ctx: crab.ToolContext, real: Path) -> str | None:
        """The text last written through the editor, while the disk still holds what it held then."""
        written = ctx.state.get(WRITTEN_KEY, {})
        if str(real) not in written:
            return None
        disk_before, text = written[str(real)]
        if _disk_digest(real) == disk_before:
            return str(text)
        del written[str(real)]  # saved, or changed on disk since: the disk is the truth again
        return None

    async def current(ctx: crab.ToolContext, real: Path, display: str) -> str:
        if blind and (text := unsaved(ctx, real)) is not None:
            return text
        try:
            return await reader(ctx.session_id, str(real))
        except crab.ToolError:
            raise
        except Exception as exc:
            who = "the editor" if read_file is not None else "crab"
            raise crab.ToolError(f"{who} could not read {display}: {exc}") from None

    def remember(ctx: crab.ToolContext, real: Path, text: str) -> None:
        ctx.state.setdefault(STATE_KEY, {})[str(real)] = _digest(text)

    async def gate(ctx: crab.ToolContext, real: Path, display: str) -> str | None:
        """The file's text now, when it exists and was read (unchanged) in this session; None when it is new."""
        if not real.exists() and not (blind and unsaved(ctx, real) is not None):
            return None
        if real.is_dir():
            raise crab.ToolError(f"{display} is a folder, not a file")
        seen = ctx.state.get(STATE_KEY, {}).get(str(real))
        if seen is None:
            raise crab.ToolError(f"read {display} first: crab changes an existing file only after reading it")
        text = await current(ctx, real, display)
        if _digest(text) != seen:
            raise crab.ToolError(f"{display} changed since you read it; read it again before changing it")
        return text

    async def put(ctx: crab.ToolContext, real: Path, display: str, text: str) -> None:
        if blind:
            ctx.state.setdefault(WRITTEN_KEY, {})[str(real)] = (_disk_digest(real), text)
        try:
            await writer(ctx.session_id, str(real), text)
        except Exception as exc:
            who = "the editor" if write_file is not None else "crab"
            raise crab.ToolError(f"{who} could not write {display}: {exc}") from None
        remember(ctx, real, text)

    @crab.tool(override=True, output_limit=None)
    async def read(
        path: Annotated[str, "file to read, relative to the workspace"],
        ctx: crab.ToolContext,
        offset: Annotated[int | None, "1-based line to start from (default 1)"] = None,
        limit: Annotated[int | None, "most lines to show (default and maximum 2000)"] = None,
    ) -> str:
        """Read a text file (as the editor has it, unsaved changes included); each line is shown
        after its number and a tab, a prefix that is not in the file.

        Never copy that prefix into edit's `old` or `new`. Shows at most 2,000 lines or 50 KB
        from `offset` and says how to read on (`offset=N`). Reading a file lets write and edit
        change it later in this session.
        """
        real, display = inside(ctx.workspace, path)
        if real.is_dir():
            raise crab.ToolError(f"{display} is a folder, not a file: use ls to list it")
        text = await current(ctx, real, display)
        remember(ctx, real, text)
        return numbered(text, offset or 1, limit)

    @crab.tool(permission="write", override=True, output_limit=None)
    async def write(
        path: Annotated[str, "file to create or overwrite, relative to the workspace"],
        content: Annotated[str, "the complete new content of the file"],
        ctx: crab.ToolContext,
    ) -> crab.ToolResult:
        """Create a file, or replace its whole content, through the editor (which shows the change).

        `content` is the whole file, every line written out: never a placeholder such as "...
        rest unchanged ...". To change part of an existing file, use edit. Overwriting needs a
        read of the file earlier in this session and no change since.
        """
        real, display = inside(ctx.workspace, path)
        before = await gate(ctx, real, display)
        await put(ctx, real, display, content)
        verb = "overwrote" if before is not None else "created"
        lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        return crab.ToolResult(
            f"{verb} {display} ({lines} lines) {where}", diffs=(file_diff(display, before, content),)
        )

    @crab.tool(permission="write", override=True, output_limit=None, prepare_arguments=_prepare_edit)
    async def edit(
        path: Annotated[str, "file to change, relative to the workspace"],
        edits: Annotated[list[Edit], "replacements, each {old, new}, checked against the file as it is now"],
        ctx: crab.ToolContext,
    ) -> crab.ToolResult:
        """Replace exact text in a file, through the editor: each `old` must appear exactly once,
        unless `replace_all` is set.

        Copy `old` from what read showed, without the line-number prefix; `new` is the complete
        replacement. Every edit is checked against the original before anything is written: if
        one fails, the file is not touched. Edits may not overlap. Needs a read of the file
        earlier in this session and no change since. To create a file, use write.
        """
        real, display = inside(ctx.workspace, path)
        before = await gate(ctx, real, display)
        if before is None:
            raise crab.ToolError(f"{display} does not exist: create it with write")
        after = replace_all(before, list(edits))
        await put(ctx, real, display, after)
        diff = file_diff(display, before, after)
        return crab.ToolResult(f"edited {display} {where} (+{diff.added} -{diff.removed} lines)", diffs=(diff,))

    tools = [read, write, edit]
    if read_file is None:
        tools[0] = _reworded(read, "(as the editor has it, unsaved changes included)", "(from disk)")
    if write_file is None:
        tools[1] = _reworded(write, ", through the editor (which shows the change)", " on disk")
        tools[2] = _reworded(edit, ", through the editor:", " on disk:")
    return tools


def _reworded(tool: crab.Tool, said: str, instead: str) -> crab.Tool:
    """``tool`` with its description telling where it reads or writes (the editor or the disk)."""
    return dataclasses.replace(tool, description=tool.description.replace(said, instead))
