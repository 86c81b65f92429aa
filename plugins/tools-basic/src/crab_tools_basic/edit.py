"""The ``edit`` tool: exact, all-or-nothing replacements in one file, gated and atomic; its result
carries the diff, and its preview computes that diff without writing (the permission question)."""

from __future__ import annotations

import hashlib
import json
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

from crab import ToolContext, ToolError, ToolResult, tool
from crab.events import FileDiff

from crab_tools_basic import anchored, read_gate, splice
from crab_tools_basic.diffs import MAX_DIFF_INPUT, file_diff, too_large
from crab_tools_basic.files import Missing, open_existing, refuse_hardlinked
from crab_tools_basic.oserrors import os_errors
from crab_tools_basic.splice import apply_edits
from crab_tools_basic.text import looks_binary
from crab_tools_basic.workspace import settings_of, workspace_of

MAX_PLACES = 20
"""Replacements whose lines the result names (``replace_all`` may make many more)."""


class _Replacement(TypedDict):
    old: Annotated[
        str,
        "the exact current text (not empty), copied without read's line-number prefix; "
        "add a few lines around it when it is not unique",
    ]
    new: Annotated[str, "the complete text that replaces it (no '... unchanged ...' placeholders); empty to delete it"]


class Edit(_Replacement, total=False):
    """One replacement: ``old`` is the exact current text, ``new`` what replaces it;
    ``replace_all`` replaces every occurrence instead of requiring exactly one."""

    replace_all: Annotated[bool, "replace every occurrence of old"]


_PATH_ALIASES = ("file_path", "filePath", "file", "filename")
_OLD_ALIASES = ("old", "oldText", "old_text", "old_string", "oldString", "old_str")
_NEW_ALIASES = ("new", "newText", "new_text", "new_string", "newString", "new_str")
_ALL_ALIASES = ("replace_all", "replaceAll")


def _pop_alias(args: dict[str, Any], names: Sequence[str]) -> tuple[bool, Any]:
    for name in names:
        if name in args:
            return True, args.pop(name)
    return False, None


def _normalise_edit(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    item = dict(item)
    has_old, old = _pop_alias(item, _OLD_ALIASES)
    has_new, new = _pop_alias(item, _NEW_ALIASES)
    has_all, every = _pop_alias(item, _ALL_ALIASES)
    if has_old:
        item["old"] = old
    if has_new:
        item["new"] = new
    if has_all:
        item["replace_all"] = every
    return item


def prepare_edit_arguments(args: dict[str, Any]) -> dict[str, Any]:
    """Accept the shapes models send: ``file_path``, a top-level old/new pair (with its
    ``replace_all``), ``edits`` as JSON text.

    Raises ``ValueError`` for ``edits`` text that is not JSON (the tool answers with it).
    """
    args = dict(args)
    if "path" not in args:
        found, value = _pop_alias(args, _PATH_ALIASES)
        if found:
            args["path"] = value
    edits = args.get("edits")
    if isinstance(edits, str):
        try:
            edits = json.loads(edits)
        except json.JSONDecodeError as exc:
            raise ValueError(f"edits is text that is not JSON ({exc.msg}); send a list of {{old, new}}") from None
    if isinstance(edits, dict):
        edits = [edits]
    has_old, old = _pop_alias(args, _OLD_ALIASES)
    has_new, new = _pop_alias(args, _NEW_ALIASES)
    if has_old or has_new:
        has_all, every = _pop_alias(args, _ALL_ALIASES)
        fields = (("old", old, has_old), ("new", new, has_new), ("replace_all", every, has_all))
        pair = {k: v for k, v, present in fields if present}
        edits = [*(edits if isinstance(edits, list) else []), pair]
    if isinstance(edits, list):
        args["edits"] = [_normalise_edit(item) for item in edits]
    elif edits is not None:
        args["edits"] = edits
    return args


def edit_file(
    state: dict[str, Any],
    root: Path,
    real: Path,
    display: str,
    edits: Sequence[splice.Edit],
    allow_hardlinks: bool = True,
) -> ToolResult:
    """Apply ``edits`` to ``real`` (inside ``root``) after the read gate; untouched unless all apply.

    The file is opened, and replaced, from ``root`` without following a symlink on the way. The
    result's text says where the edits landed; its ``diffs`` hold the change.
    """
    with read_gate.path_lock(state, real), anchored.parent_of(root, real, display) as parent:
        handle, info = open_existing(parent)
        with handle:
            refuse_hardlinked(handle, display, allow_hardlinks)
            original = handle.read()
        if looks_binary(original):
            raise ToolError(f"{display} is a binary file; edit changes text files only")
        read_gate.check(state, real, display, hashlib.sha256(original).hexdigest(), info.st_mtime_ns)
        updated, landed = apply_edits(original, edits)
        mtime_ns = anchored.replace_entry(parent, updated, stat.S_IMODE(info.st_mode))
        read_gate.remember(state, real, hashlib.sha256(updated).hexdigest(), mtime_ns)
    where = ", ".join(
        f"line {r.first_line}" if r.first_line == r.last_line else f"lines {r.first_line}-{r.last_line}"
        for r in landed[:MAX_PLACES]
    )
    if len(landed) > MAX_PLACES:
        where += f" and {len(landed) - MAX_PLACES} more"
    count = "1 replacement" if len(landed) == 1 else f"{len(landed)} replacements"
    return ToolResult(f"edited {display}: {count} ({where})", diffs=(file_diff(display, original, updated),))


def preview_edit(arguments: dict[str, Any], ctx: ToolContext) -> list[FileDiff]:
    """The diff ``edit`` would make with these (prepared) arguments, nothing written; [] when
    the edits would not apply (the call itself then says why)."""
    settings = settings_of(ctx)
    ws = workspace_of(ctx, settings)
    try:
        real = ws.resolve(arguments["path"], write=True)
        display = ws.display(real)
        with anchored.parent_of(ws.scope_of(real), real, display) as parent:
            handle, info = open_existing(parent)
            with handle:
                refuse_hardlinked(handle, display, settings.allow_hardlinks)
                if info.st_size > MAX_DIFF_INPUT:  # asked before the user's word: not read for a diff not shown
                    return [too_large(display, info.st_size, None)]
                original = handle.read()
        if looks_binary(original):
            return []
        changes = [(e["old"], e["new"], e.get("replace_all", False)) for e in arguments["edits"]]
        updated, _ = apply_edits(original, changes)
    except (Missing, ToolError, OSError, KeyError, TypeError):
        return []
    return [file_diff(display, original, updated)]


# crab ships no py.typed yet, so mypy sees its decorators as untyped.
@tool(
    permission="write",
    prepare_arguments=prepare_edit_arguments,
    output_limit=None,
    preview=preview_edit,
)
def edit(
    path: Annotated[str, "file to change"],
    edits: Annotated[list[Edit], "replacements, each {old, new}"],
    ctx: ToolContext,
) -> ToolResult:
    """Replace exact text in a file: each `old` must appear exactly once, unless `replace_all` is set.

    Matching is literal: whitespace and indentation count; line endings may be sent as LF.
    Every edit is checked against the file as it is before anything is written: if one fails,
    the file is not touched. Edits may not overlap, and `new` must differ from `old`. Everything outside
    the replaced text stays byte for byte the same (BOM and line endings too). To move code,
    send two edits in one call: one removes it, one inserts it. Needs a read of the file
    earlier in this session and no change on disk since. To create a file, use write.

    Example: `{"path": "app.py", "edits": [{"old": "    return a - b", "new": "    return a + b"}]}`
    """
    settings = settings_of(ctx)
    ws = workspace_of(ctx, settings)
    real = ws.resolve(path, write=True)
    with os_errors(f"cannot edit {ws.display(real)}"):
        changes = [(e["old"], e["new"], e.get("replace_all", False)) for e in edits]
        return edit_file(ctx.state, ws.scope_of(real), real, ws.display(real), changes, settings.allow_hardlinks)
