"""The ignore files git reads besides .gitignore: a repository's ``info/exclude`` and the user's
global excludes file, found as git finds them, without running git.

The global file is ``core.excludesFile`` from the user's git config (``$GIT_CONFIG_GLOBAL``, else
``~/.gitconfig`` over ``$XDG_CONFIG_HOME/git/config``), else ``$XDG_CONFIG_HOME/git/ignore``
(``~/.config/git/ignore``). Like ripgrep, only those files are read: no ``[include]``, no
system or repository config. Both apply only inside a repository, as for git and ripgrep.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from crab_tools_basic.gitignore import read_rules_file

_SECTION = re.compile(r"^\s*\[\s*([A-Za-z0-9.-]+)\s*(?:\"[^\"]*\"\s*)?\]")
_EXCLUDES = re.compile(r"^\s*excludesfile\s*=\s*(.*)$", re.IGNORECASE)


def _value(raw: str) -> str:
    """A git config value: quotes removed, a ``;``/``#`` comment outside them dropped."""
    out: list[str] = []
    quoted = False
    for c in raw.strip():
        if c == '"':
            quoted = not quoted
        elif c in ";#" and not quoted:
            break
        else:
            out.append(c)
    return "".join(out).strip()


def excludes_setting(text: str) -> str | None:
    """The last ``excludesFile`` of the ``[core]`` sections in a git config file's text."""
    section = ""
    found: str | None = None
    for line in text.splitlines():
        header = _SECTION.match(line)
        if header is not None:
            section = header.group(1).lower()
            line = line[header.end() :]
        match = _EXCLUDES.match(line)
        if match is not None and section == "core":
            found = _value(match.group(1))
    return found or None


def _expand(value: str) -> Path:
    return Path.home() / value[2:] if value.startswith("~/") else Path(value)


def global_excludes_file() -> Path | None:
    """The user's global excludes file, whether or not it exists (None when none can be named)."""
    configured = os.environ.get("GIT_CONFIG_GLOBAL")
    xdg = os.environ.get("XDG_CONFIG_HOME") or ""
    try:
        config_home = Path(xdg) if xdg else Path.home() / ".config"
        configs = [Path(configured)] if configured else [Path.home() / ".gitconfig", config_home / "git" / "config"]
    except RuntimeError:  # no home folder to be found
        return None
    for config in configs:
        text = read_rules_file(config, follow_symlinks=True)
        setting = excludes_setting(text) if text is not None else None
        if setting:
            return _expand(setting)
    return config_home / "git" / "ignore"


def git_dir(top: Path) -> Path | None:
    """The folder holding ``info/exclude`` for the work tree at ``top``, or None when it has no ``.git``.

    ``.git`` is that folder, or (a worktree, a submodule) a file naming it with ``gitdir:``,
    whose ``commondir`` file names the shared one.
    """
    dot_git = top / ".git"
    if dot_git.is_dir():
        return dot_git
    text = read_rules_file(dot_git)
    if text is None or not text.startswith("gitdir:"):
        return None
    found = top / text[len("gitdir:") :].strip()
    common = read_rules_file(found / "commondir")
    return found / common.strip() if common else found


def enclosing_top(folder: Path) -> Path | None:
    """The work tree top of the repository ``folder`` lies in (``folder`` itself included), or None."""
    for candidate in (folder, *folder.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return None
