"""crab's tool names and arguments as Claude Code's hooks know them, and back.

A hook script written for Claude Code matches ``Bash`` and reads ``tool_input.command``; for
``Read``, ``Write`` and ``Edit`` it reads an absolute ``file_path``, ``old_string`` and
``new_string``. ``to_claude`` gives a crab call that shape; ``from_claude`` turns a hook's
``updatedInput`` back into crab's arguments. A tool Claude Code has no name for (an MCP tool,
``schedule_add``) keeps crab's name and arguments both ways.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

CLAUDE_NAMES: dict[str, str] = {
    "bash": "Bash",
    "read": "Read",
    "write": "Write",
    "edit": "Edit",
    "grep": "Grep",
    "glob": "Glob",
    "ls": "LS",
    "web_fetch": "WebFetch",
    "web_search": "WebSearch",
}
"""crab-tools-basic's and crab-tools-web's tools; a multi-edit ``edit`` call is ``MultiEdit``."""

Args = dict[str, Any]


def claude_name(tool: str, arguments: Mapping[str, Any]) -> str:
    """The name a Claude Code matcher sees for a call of crab's ``tool``."""
    edits = arguments.get("edits")
    if tool == "edit" and isinstance(edits, list) and len(edits) > 1:
        return "MultiEdit"
    return CLAUDE_NAMES.get(tool, tool)


def _absolute(path: Any, workspace: Path) -> Any:
    if not isinstance(path, str) or not path:
        return path
    return str(workspace / path) if not Path(path).is_absolute() else path


def _relative(path: Any, workspace: Path) -> Any:
    """A path inside the workspace as crab's tools take it; anything else as it is (the tool refuses)."""
    if not isinstance(path, str) or not Path(path).is_absolute():
        return path
    try:
        return Path(path).relative_to(workspace).as_posix() or "."
    except ValueError:
        return path


def _renamed(arguments: Mapping[str, Any], names: Mapping[str, str]) -> Args:
    return {names.get(key, key): value for key, value in arguments.items()}


def _edit_to_claude(args: Mapping[str, Any], workspace: Path) -> Args:
    given = args.get("edits")
    edits = [
        {"old_string": e.get("old"), "new_string": e.get("new"), "replace_all": bool(e.get("replace_all", False))}
        for e in (given if isinstance(given, list) else ())
        if isinstance(e, Mapping)
    ]
    out: Args = {"file_path": _absolute(args.get("path"), workspace)}
    if len(edits) == 1:
        out.update(edits[0])
    else:
        out["edits"] = edits
    return out


def _edit_from_claude(args: Mapping[str, Any], workspace: Path) -> Args:
    if isinstance(args.get("edits"), list):
        edits = [
            {"old": e.get("old_string", e.get("old")), "new": e.get("new_string", e.get("new")), **_all(e)}
            for e in args["edits"]
            if isinstance(e, Mapping)
        ]
    else:
        edits = [{"old": args.get("old_string"), "new": args.get("new_string"), **_all(args)}]
    return {"path": _relative(args.get("file_path", args.get("path")), workspace), "edits": edits}


def _all(edit: Mapping[str, Any]) -> Args:
    return {"replace_all": True} if edit.get("replace_all") else {}


def _grep_to_claude(args: Mapping[str, Any], workspace: Path) -> Args:
    out: Args = {"pattern": args.get("pattern")}
    if args.get("path") is not None:
        out["path"] = _absolute(args["path"], workspace)
    if args.get("glob") is not None:
        out["glob"] = args["glob"]
    out["output_mode"] = "files_with_matches" if args.get("files_only") else "content"
    if args.get("ignore_case"):
        out["-i"] = True
    if args.get("context"):
        out["-C"] = args["context"]
    if args.get("limit") is not None:
        out["head_limit"] = args["limit"]
    if args.get("literal"):
        out["literal"] = True  # crab's own: Claude Code's Grep has no literal mode
    return out


def _grep_from_claude(args: Mapping[str, Any], workspace: Path) -> Args:
    out: Args = {"pattern": args.get("pattern")}
    if args.get("path") is not None:
        out["path"] = _relative(args["path"], workspace)
    for theirs, ours in (("glob", "glob"), ("head_limit", "limit"), ("literal", "literal")):
        if args.get(theirs) is not None:
            out[ours] = args[theirs]
    if args.get("-i"):
        out["ignore_case"] = True
    if args.get("-C") is not None:
        out["context"] = args["-C"]
    if args.get("output_mode") == "files_with_matches":
        out["files_only"] = True
    return out


def _path_tool(names: Mapping[str, str]) -> tuple[Callable[[Mapping[str, Any], Path], Args], ...]:
    """Converters for a tool whose arguments are renamed one to one and whose path is absolute there."""
    back = {theirs: ours for ours, theirs in names.items()}
    path_key = names.get("path", "path")

    def there(args: Mapping[str, Any], workspace: Path) -> Args:
        out = _renamed(args, names)
        if path_key in out:
            out[path_key] = _absolute(out[path_key], workspace)
        return out

    def here(args: Mapping[str, Any], workspace: Path) -> Args:
        out = _renamed(args, back)
        if "path" in out:
            out["path"] = _relative(out["path"], workspace)
        return out

    return there, here


def _bash_to_claude(args: Mapping[str, Any], workspace: Path) -> Args:
    out: Args = {"command": args.get("command")}
    if isinstance(args.get("timeout"), int | float):
        out["timeout"] = int(args["timeout"] * 1000)  # Claude Code's Bash takes milliseconds
    return out


def _bash_from_claude(args: Mapping[str, Any], workspace: Path) -> Args:
    out: Args = {"command": args.get("command")}
    if isinstance(args.get("timeout"), int | float):
        out["timeout"] = args["timeout"] / 1000
    return out


_CONVERTERS: dict[str, tuple[Callable[[Mapping[str, Any], Path], Args], ...]] = {
    "bash": (_bash_to_claude, _bash_from_claude),
    "read": _path_tool({"path": "file_path"}),
    "write": _path_tool({"path": "file_path"}),
    "edit": (_edit_to_claude, _edit_from_claude),
    "grep": (_grep_to_claude, _grep_from_claude),
    "glob": _path_tool({}),
    "ls": _path_tool({}),
    "web_fetch": _path_tool({}),
    "web_search": _path_tool({}),
}


def to_claude(tool: str, arguments: Mapping[str, Any], workspace: Path) -> tuple[str, Args]:
    """(Claude Code's tool name, ``tool_input``) for a call of crab's ``tool``."""
    name = claude_name(tool, arguments)
    converters = _CONVERTERS.get(tool)
    return name, (converters[0](arguments, workspace) if converters else dict(arguments))


def from_claude(tool: str, updated: Mapping[str, Any], workspace: Path) -> Args:
    """crab's arguments for ``tool`` from a hook's ``updatedInput``, which replaces the whole input
    as Claude Code's hooks reference says (an argument the hook leaves out is gone). crab's own
    arguments with no Claude Code counterpart (grep's ``literal``, web_fetch's ``start``) are in
    ``tool_input`` as they are, so a hook can keep them."""
    converters = _CONVERTERS.get(tool)
    if converters is None:
        return dict(updated)
    return {k: v for k, v in converters[1](updated, workspace).items() if v is not None}
