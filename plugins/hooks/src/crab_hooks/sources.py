"""Which hook commands this run has: crab's ``[plugins.hooks] events`` and Claude Code's settings files.

Read in this order (it decides whose block is reported when several block): crab's table (core has
already dropped an untrusted project's), ``~/.claude/settings.json`` (``$CLAUDE_CONFIG_DIR`` moves
it, as in Claude Code), then the project's ``.claude/settings.json`` and ``.claude/settings.local.json``
(the nearest ``.claude`` from the workspace up to the repository root). The project's files run
only when the user trusted the project (``crab trust``, which records its ``.crab/config.toml``);
otherwise one line says so and how to trust it. A file crab cannot read is one line too.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from crab import Config
from crab.config import crab_home

from crab_hooks.settings import EVENTS, KINDS

_PLAIN = re.compile(r"[A-Za-z0-9_|]+")


@dataclass(frozen=True, slots=True)
class HookCommand:
    """One configured hook handler: what runs (a shell command, or the URL an ``http`` hook posts
    to, in ``command``), for how long, where it was configured. ``timeout`` is None when the hook
    names none (the event's default applies: ``[plugins.hooks] timeout``, SessionEnd's 1.5 s)."""

    command: str
    timeout: float
    source: str
    project_dir: Path
    kind: str = "command"
    headers: tuple[tuple[str, str], ...] = ()
    """An ``http`` hook's extra headers, ``$VAR`` not yet filled in."""
    allowed_env: tuple[str, ...] = ()
    """The environment variables an ``http`` hook's headers may name (``allowedEnvVars``)."""
    own_timeout: bool = False
    """Whether the hook set ``timeout`` itself."""
    condition: str | None = None
    """Its ``if`` (permission-rule syntax, ``crab_hooks.conditions``): it runs only for calls it names."""
    background: bool = False
    """``async: true`` (or ``asyncRewake``): started in the background, never waited for."""
    project: bool = False
    """Whether it comes from a project's ``.claude`` files: its PermissionRequest ``allow`` is
    not taken (a repository's file never approves a call), its ``deny`` is."""


@dataclass(frozen=True, slots=True)
class Group:
    """A ``matcher`` and the commands that run when it matches."""

    matcher: str
    commands: tuple[HookCommand, ...]

    def matches(self, names: Sequence[str]) -> bool:
        """Claude Code's rule: empty or ``*`` matches everything, a plain name (or ``A|B``) matches
        exactly, anything else is a regular expression searched in the name."""
        pattern = self.matcher.strip()
        if pattern in ("", "*"):
            return True
        if _PLAIN.fullmatch(pattern):
            return any(name in pattern.split("|") for name in names)
        try:
            return any(re.search(pattern, name) for name in names)
        except re.error:
            return False


@dataclass
class HookSet:
    """Every hook of this run by event, and the lines to show once about what was left out."""

    groups: dict[str, list[Group]] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)

    def commands(self, event: str, names: Sequence[str] = ()) -> list[HookCommand]:
        """The commands to run for ``event``; ``names`` are what a matcher is tested against (a
        tool's Claude Code and crab names, a session start's source). The same command (or http
        hook URL) configured twice runs once, as in Claude Code."""
        found: dict[tuple[str, str], HookCommand] = {}
        for group in self.groups.get(event, []):
            if not names or group.matches(names):
                for command in group.commands:
                    found.setdefault((command.kind, command.command), command)
        return list(found.values())

    def add(
        self, raw: Mapping[str, Any], source: str, project_dir: Path, timeout: float, project: bool = False
    ) -> None:
        """Add the hooks of one ``hooks`` block (Claude Code's shape); a bad entry is one notice."""
        for event, groups in raw.items():
            if event not in EVENTS:
                continue  # Notification, CwdChanged…: events crab has no moment for (README.md)
            if not isinstance(groups, list):
                self.notices.append(f"{source}: hooks.{event} is not a list; its hooks were not loaded")
                continue
            for group in groups:
                loaded = self._group(group, event, source, project_dir, timeout)
                if loaded is not None and project:
                    loaded = Group(loaded.matcher, tuple(replace(c, project=True) for c in loaded.commands))
                if loaded is not None:
                    self.groups.setdefault(event, []).append(loaded)

    def _group(self, group: Any, event: str, source: str, project_dir: Path, timeout: float) -> Group | None:
        matcher = group.get("matcher", "") if isinstance(group, Mapping) else None
        hooks = group.get("hooks") if isinstance(group, Mapping) else None
        if not isinstance(matcher, str) or not isinstance(hooks, list):
            self.notices.append(f"{source}: an entry of hooks.{event} has no matcher string and hooks list; skipped")
            return None
        if not _PLAIN.fullmatch(matcher.strip() or "x") and matcher.strip() != "*":
            try:
                re.compile(matcher)
            except re.error as exc:
                self.notices.append(f"{source}: hooks.{event} matcher {matcher!r} is not a regular expression ({exc})")
                return None
        commands: list[HookCommand] = []
        for hook in hooks:
            loaded = self._handler(hook, event, source, project_dir, timeout)
            if loaded is not None:
                commands.append(loaded)
        return Group(matcher, tuple(commands)) if commands else None

    def _handler(self, hook: Any, event: str, source: str, project_dir: Path, timeout: float) -> HookCommand | None:
        kind = hook.get("type", "command") if isinstance(hook, Mapping) else None
        if kind not in KINDS:
            self.notices.append(
                f"{source}: a hooks.{event} hook of type {kind!r} was skipped (crab runs command and http hooks)"
            )
            return None
        assert isinstance(hook, Mapping)
        condition = hook.get("if")
        if condition is not None and not isinstance(condition, str):
            self.notices.append(f"{source}: a hooks.{event} hook's `if` is not a string; skipped")
            return None
        given = hook.get("timeout")
        own = isinstance(given, int | float) and not isinstance(given, bool) and given > 0
        seconds = float(given) if isinstance(given, int | float) and own else timeout
        if kind == "http":
            found = self._http(hook, event, source, project_dir, seconds, own)
            return replace(found, condition=condition) if found is not None else None
        command = hook.get("command")
        if not isinstance(command, str) or not command.strip():
            self.notices.append(f"{source}: a hooks.{event} hook has no command; skipped")
            return None
        background = hook.get("async") is True or hook.get("asyncRewake") is True
        return HookCommand(
            command, seconds, source, project_dir, own_timeout=own, background=background, condition=condition
        )

    def _http(
        self, hook: Mapping[str, Any], event: str, source: str, project_dir: Path, seconds: float, own: bool
    ) -> HookCommand | None:
        url = hook.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            self.notices.append(f"{source}: a hooks.{event} http hook has no http(s) url; skipped")
            return None
        headers = hook.get("headers") or {}
        allowed = hook.get("allowedEnvVars") or []
        if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
            self.notices.append(f"{source}: a hooks.{event} http hook's headers are not strings; skipped")
            return None
        if not isinstance(allowed, list) or not all(isinstance(v, str) for v in allowed):
            self.notices.append(f"{source}: a hooks.{event} http hook's allowedEnvVars is not a list of names; skipped")
            return None
        return HookCommand(
            url,
            seconds,
            source,
            project_dir,
            kind="http",
            headers=tuple((str(k), v) for k, v in headers.items()),
            allowed_env=tuple(allowed),
            own_timeout=own,
        )


def claude_user_dir() -> Path | None:
    """Claude Code's own folder: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``; None where the user
    has no home folder at all (no ``$HOME``, no passwd entry: a container's arbitrary uid)."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    try:
        return Path(configured).expanduser() if configured else Path.home() / ".claude"
    except RuntimeError:
        return None


def project_claude_dir(workspace: Path, user_dir: Path | None) -> Path | None:
    """The nearest ``.claude`` folder from ``workspace`` up to the repository root (never the user's)."""
    try:
        here = workspace.resolve()
        own = {crab_home().resolve(), *([user_dir.resolve()] if user_dir is not None else [])}
    except OSError:
        return None
    for folder in (here, *here.parents):
        dot = folder / ".claude"
        if dot.is_dir() and dot.resolve() not in own:
            return dot
        if (folder / ".git").exists():
            return None
    return None


def _trust_line(root: Path, config: Config) -> str | None:
    """None when the project at ``root`` is trusted, else how to trust it."""
    state = config.trust
    path = config.project_path
    if path is not None and path.parent.parent.resolve() == root.resolve():
        if state is not None and state.trusted:
            return None
        if state is not None and state.status == "changed":
            return f"{path} changed since you trusted the project; run `crab trust {root}` to run them"
        return f"the project is not trusted; run `crab trust {root}` to run them"
    wanted = root / ".crab" / "config.toml"
    return f"the project is not trusted; add {wanted} (it may be empty) and run `crab trust {root}` to run them"


def _read(path: Path) -> tuple[Mapping[str, Any] | None, str | None]:
    """The ``hooks`` block of one Claude Code settings file (None when it has none), or the problem."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"cannot read hooks from {path}: {type(exc).__name__}: {exc}"
    hooks = data.get("hooks") if isinstance(data, Mapping) else None
    if hooks is None:
        return None, None
    if not isinstance(hooks, Mapping):
        return None, f"{path}: hooks is not an object; its hooks were not loaded"
    return hooks, None


def _has_hooks(block: Mapping[str, Any]) -> bool:
    return any(event in EVENTS and groups for event, groups in block.items())


def load(workspace: Path, config: Config, settings: Mapping[str, Any]) -> HookSet:
    """Every hook this run has, with the notices about what was left out and why."""
    timeout = float(settings["timeout"])
    user_dir = claude_user_dir()
    claude_project = project_claude_dir(workspace, user_dir)
    crab_project = config.project_path.parent.parent if config.project_path is not None else None
    root = claude_project.parent if claude_project is not None else crab_project or workspace
    found = HookSet()
    events = settings.get("events")
    if events:
        found.add(events, "[plugins.hooks] events", root, timeout)
    if not settings["claude_settings"]:
        return found
    files: Iterable[Path] = [user_dir / "settings.json"] if user_dir is not None else []
    for path in files:
        block, problem = _read(path)
        if problem:
            found.notices.append(problem)
        if block:
            found.add(block, str(path), root, timeout)
    if claude_project is None:
        return found
    untrusted = _trust_line(claude_project.parent, config)
    for path in (claude_project / "settings.json", claude_project / "settings.local.json"):
        block, problem = _read(path)
        if problem:
            found.notices.append(problem)
        if not block:
            continue
        if untrusted is None:
            found.add(block, str(path), root, timeout, project=True)
        elif _has_hooks(block):
            found.notices.append(f"hooks in {path} were not run: {untrusted}")
    return found
