"""Where crab's files are: the user folder (``$CRAB_HOME``), the user config and a project's ``.crab``."""

from __future__ import annotations

from pathlib import Path

from crab._config import environ


def crab_home() -> Path:
    """``$CRAB_HOME`` or ``~/.crab``: user config, auth file, sessions."""
    return environ.crab_home()


def live_home() -> Path | None:
    """``$CRAB_HOME``, where the live-session locks go (``crab/_system/live_sessions.py``); None
    with no home folder at all (no ``$HOME``, no passwd entry): a program on a memory store still
    runs, with no liveness known."""
    from crab._contracts.errors import ConfigError

    try:
        return crab_home()
    except ConfigError:
        return None


def user_config_path() -> Path:
    return crab_home() / "config.toml"


def find_project_dir(start: Path | None = None) -> Path | None:
    """The nearest ``.crab`` folder holding a ``config.toml``, from ``start`` (cwd) upwards.

    A ``config.toml`` that is not a file (a folder, a device) still marks the project, so reading
    it can say why it is ignored. The user's own ``CRAB_HOME`` is not a project folder.
    """
    here = (start or Path.cwd()).resolve()
    home = crab_home().resolve()
    for folder in (here, *here.parents):
        candidate = folder / ".crab"
        if candidate.resolve() != home and (candidate / "config.toml").exists():
            return candidate
    return None
