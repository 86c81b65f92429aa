"""A hook's ``if``: Claude Code's permission-rule syntax, tested against a tool call.

``Bash`` or ``Bash(git *)`` (the command, ``*`` matching anything, the old ``git:*`` a prefix),
``Edit(*.ts)`` or ``Read(./src/**)`` (the file: a pattern without ``/`` is tested against the
file's name, one with ``/`` against its path from the workspace, ``//`` starting an absolute path
and ``~/`` the home folder), ``WebFetch(domain:example.com)`` (the URL's host, or a host under
it). A rule for another tool, or one crab cannot read, does not match: a hook with ``if`` runs only
when crab can tell that the call is one it names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlparse

TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest")
"""The events where ``if`` is read; on any other a hook with ``if`` never runs (Claude Code's rule)."""
FILE_TOOLS = ("Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Glob", "Grep", "LS")
_RULE = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)


def _glob(pattern: str, text: str) -> bool:
    """``*`` matches any run of characters (``/`` and spaces too), as in permission rules."""
    return re.fullmatch(".*".join(re.escape(part) for part in pattern.split("*")), text, re.DOTALL) is not None


def _path_matches(pattern: str, path: str, workspace: Path) -> bool:
    if not path:
        return False
    full = PurePosixPath(path if path.startswith("/") else (workspace / path).as_posix())
    if "/" not in pattern:
        return fnmatchcase(full.name, pattern)
    if pattern.startswith("//"):
        target, rule = full.as_posix(), pattern[1:]
    elif pattern.startswith("~/"):
        target, rule = full.as_posix(), (Path.home() / pattern[2:]).as_posix()
    else:
        try:
            target = full.relative_to(workspace.as_posix()).as_posix()
        except ValueError:
            return False
        rule = pattern[2:] if pattern.startswith("./") else pattern.lstrip("/")
    rule = rule.replace("**/", "*").replace("**", "*")
    return fnmatchcase(target, rule)


def matches(rule: str, tool_name: str, tool_input: Mapping[str, Any], workspace: Path) -> bool:
    """Whether the call of ``tool_name`` (Claude Code's name) with ``tool_input`` is one ``rule`` names."""
    parsed = _RULE.match(rule)
    if parsed is None or parsed.group(1) != tool_name:
        return False
    spec = parsed.group(2)
    if spec is None or spec.strip() in ("", "*"):
        return True
    spec = spec.strip()
    if tool_name == "Bash":
        command = str(tool_input.get("command") or "")
        if spec.endswith(":*"):
            return command.startswith(spec[:-2])
        return _glob(spec, command.strip())
    if tool_name in FILE_TOOLS:
        path = tool_input.get("file_path") or tool_input.get("path") or ""
        return isinstance(path, str) and _path_matches(spec, path, workspace)
    if tool_name == "WebFetch" and spec.startswith("domain:"):
        host = (urlparse(str(tool_input.get("url") or "")).hostname or "").lower()
        want = spec[len("domain:") :].strip().lower()
        return bool(host) and (host == want or host.endswith("." + want))
    return False
