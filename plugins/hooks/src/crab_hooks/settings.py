"""``[plugins.hooks]``: crab's own hooks table, whether Claude Code's settings files are read, the timeout.

``events`` has Claude Code's shape (``[[plugins.hooks.events.PreToolUse]]`` with ``matcher`` and
``hooks = [{ type = "command", command = "…", timeout = 30 }]``) and is trust-only: a hook starts a
process, so an untrusted project's ``events`` are dropped by core, with its one line saying how
to trust the project. ``check_events`` rejects a malformed table before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crab import ConfigTable, InvalidValue, Setting

EVENTS = (
    "PreToolUse",
    "PermissionRequest",
    "Notification",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
    "StopFailure",
    "SessionStart",
    "SessionEnd",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "InstructionsLoaded",
    "WorktreeCreate",
    "WorktreeRemove",
)
"""The Claude Code events crab runs hooks for; others in a Claude Code file are left alone
(README.md, "Events crab cannot have", says why for each)."""
KINDS = ("command", "http")
"""Hook types crab runs; Claude Code's ``prompt`` and ``agent`` are left out (one line)."""
DEFAULT_TIMEOUT = 60.0
"""Seconds a hook command may run when it names no ``timeout`` (Claude Code's default)."""
MAX_TIMEOUT = 3600.0
KEY = ("plugins", "hooks", "events")


def check_events(values: Mapping[str, Any]) -> None:
    """``events`` in Claude Code's shape, or ``InvalidValue`` naming the first key that is not."""
    events = values.get("events") or {}
    for event, groups in events.items():
        if event not in EVENTS:
            raise InvalidValue((*KEY, event), "one of " + ", ".join(EVENTS), event)
        if not isinstance(groups, list):
            raise InvalidValue((*KEY, event), "a list of tables ([[plugins.hooks.events.NAME]])", groups)
        for n, group in enumerate(groups):
            where = (*KEY, event, str(n))
            if not isinstance(group, Mapping):
                raise InvalidValue(where, "a table with matcher and hooks", group)
            if not isinstance(group.get("matcher", ""), str):
                raise InvalidValue(
                    (*where, "matcher"), "a string (a tool name or regular expression)", group["matcher"]
                )
            hooks = group.get("hooks")
            if not isinstance(hooks, list) or not hooks:
                raise InvalidValue((*where, "hooks"), 'a list of {type = "command", command = "…"}', hooks)
            for m, hook in enumerate(hooks):
                at = (*where, "hooks", str(m))
                if not isinstance(hook, Mapping) or hook.get("type", "command") not in KINDS:
                    raise InvalidValue(at, 'a table with type = "command" or "http"', hook)
                if hook.get("type", "command") == "http":
                    url = hook.get("url")
                    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                        raise InvalidValue((*at, "url"), "an http:// or https:// URL", url)
                else:
                    command = hook.get("command")
                    if not isinstance(command, str) or not command.strip():
                        raise InvalidValue((*at, "command"), "a shell command", command)
                timeout = hook.get("timeout")
                ok = timeout is None or (
                    isinstance(timeout, int | float) and not isinstance(timeout, bool) and 0 < timeout <= MAX_TIMEOUT
                )
                if not ok:
                    raise InvalidValue((*at, "timeout"), f"seconds > 0 and <= {MAX_TIMEOUT:g}", timeout)


TABLE = ConfigTable(
    "hooks",
    (
        Setting(
            "events",
            "table",
            doc="hooks by event in Claude Code's shape (PreToolUse, Stop, SessionEnd…; README.md lists them)",
            trust_only=True,
        ),
        Setting(
            "claude_settings",
            "bool",
            True,
            "also run the hooks in Claude Code's settings (~/.claude/settings.json, a trusted project's .claude/)",
            trust_order=(False, True),
        ),
        Setting(
            "timeout",
            "float",
            DEFAULT_TIMEOUT,
            "seconds a hook command may run when it sets no timeout",
            above=0,
            maximum=MAX_TIMEOUT,
        ),
    ),
    doc="command and HTTP hooks on tool calls, prompts, turns, sessions, subagents, compaction (Claude Code's format)",
    check=check_events,
)
