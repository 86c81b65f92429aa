"""``read``, ``write`` and ``edit`` through the editor (``fs/read_text_file``, ``fs/write_text_file``).

Offered (with ``override=True``, in place of crab-tools-basic's tools of those names) when the
client says it can read and write text files: the model then sees unsaved buffers, and its
changes land in the editor, which shows them and keeps its undo history. The rules are crab's:
a path must stay inside the workspace (symlinks resolved), an existing file is changed only
after a read in this session and if it is unchanged since (the read gate), every edit is checked
before anything is written, and each change comes back with its ``crab.FileDiff``.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import crab

READ_LINES = 2000
READ_BYTES = 50_000
WHOLE_TEXT = 200_000
"""Texts up to this many characters go into a diff whole (``before``/``after``), for the editor's review."""
STATE_KEY = "crab-acp.read"

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


def file_diff(display: str, before: str | None, after: str) -> crab.FileDiff:
    old = (before or "").splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    lines = list(difflib.unified_diff(old, new, f"a/{display}", f"b/{display}", n=3))
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    small = len(after) <= WHOLE_TEXT and len(before or "") <= WHOLE_TEXT
    return crab.FileDiff(
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


def editor_file_tools(read_file: Reader, write_file: Writer) -> list[crab.Tool]:
    """The three tools, reading with ``read_file(session, path)``, writing with
    ``write_file(session, path, text)``."""

    async def current(ctx: crab.ToolContext, real: Path, display: str) -> str:
        try:
            return await read_file(ctx.session_id, str(real))
        except crab.ToolError:
            raise
        except Exception as exc:
            raise crab.ToolError(f"the editor could not read {display}: {exc}") from None

    def remember(ctx: crab.ToolContext, real: Path, text: str) -> None:
        ctx.state.setdefault(STATE_KEY, {})[str(real)] = _digest(text)

    async def gate(ctx: crab.ToolContext, real: Path, display: str) -> str | None:
        """The file's text now, when it exists and was read (unchanged) in this session; None when it is new."""
        if not real.exists():
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
        try:
            await write_file(ctx.session_id, str(real), text)
        except Exception as exc:
            raise crab.ToolError(f"the editor could not write {display}: {exc}") from None
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
            f"{verb} {display} ({lines} lines) in the editor", diffs=(file_diff(display, before, content),)
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
        return crab.ToolResult(f"edited {display} in the editor (+{diff.added} -{diff.removed} lines)", diffs=(diff,))

    return [read, write, edit]
