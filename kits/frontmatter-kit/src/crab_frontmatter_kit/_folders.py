"""Where a kind of definition file lives: the user's folder under ``$CRAB_HOME`` and the project's.

A project's folder is the nearest ``.crab/<kind>`` from the workspace upwards, stopping at the
repository root (a folder with ``.git``); ``$CRAB_HOME`` is never a project. It is trusted only
when that ``.crab`` folder is the one whose ``config.toml`` the user trusted (``crab trust``): what
an untrusted repository defines may add names but never widen tools or permissions.
"""

from __future__ import annotations

from pathlib import Path

from crab import Config
from crab.config import crab_home


def user_folder(kind: str) -> Path:
    """``$CRAB_HOME/<kind>`` (it may not exist)."""
    return crab_home() / kind


def project_folder(workspace: Path, kind: str) -> Path | None:
    """The nearest ``.crab/<kind>`` folder from ``workspace`` up to the repository root, or None."""
    try:
        here = workspace.resolve()
        home = crab_home().resolve()
    except OSError:
        return None
    for folder in (here, *here.parents):
        dot = folder / ".crab"
        if (dot / kind).is_dir() and dot.resolve() != home:
            return dot / kind
        if (folder / ".git").exists():
            return None
    return None


def project_trusted(folder: Path, config: Config) -> bool:
    """Whether ``folder`` (a ``.crab/<kind>``) belongs to the project config the user trusted."""
    state = config.trust
    if config.project_path is None or state is None or not getattr(state, "trusted", False):
        return False
    try:
        return config.project_path.parent.resolve() == folder.parent.resolve()
    except OSError:
        return False
