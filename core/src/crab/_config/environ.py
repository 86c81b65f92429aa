"""Every ``CRAB_*`` environment variable core reads, read here and nowhere else (a plugin reads its
own); each function takes the environment to read (default ``os.environ``) so tests pass their own."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

HOME = "CRAB_HOME"
"""The user's folder (config, keys, sessions); default ``~/.crab``."""
PLUGINS = "CRAB_PLUGINS"
"""Comma list of plugins to load, like ``--plugins`` (set but empty = none)."""
STRICT_PLUGINS = "CRAB_STRICT_PLUGINS"
"""``1``: a plugin failure ends the command (exit 2) instead of a warning."""

CONFIG_VARIABLES: dict[str, str] = {
    "CRAB_PROVIDER": "crab.provider",
    "CRAB_MODEL": "crab.model",
    "CRAB_STORE": "crab.store",
    "CRAB_RENDERER": "crab.renderer",
    "CRAB_PERMISSIONS": "crab.permissions",
    "CRAB_MAX_ITERATIONS": "crab.max_iterations",
    "CRAB_TOOL_TIMEOUT": "crab.tool_timeout",
}
"""Environment variables that override ``[crab]`` keys, above the config files, below flags."""

ALL: tuple[str, ...] = (HOME, PLUGINS, STRICT_PLUGINS, *CONFIG_VARIABLES)
"""Every variable crab reads (the test kit clears them for each test)."""


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def crab_home(env: Mapping[str, str] | None = None) -> Path:
    """``$CRAB_HOME`` or ``~/.crab``.

    Remembered per (``$CRAB_HOME``, ``$HOME``) text: every file tool call asks, and making the
    path (``Path.home()``, ``expanduser``) costs ~8 µs. Either variable changing (tests, a
    program that sets them) gives the new answer; without ``$HOME`` (the passwd entry is read)
    nothing is remembered.
    """
    value = _env(env).get(HOME)
    user_home = os.environ.get("HOME")  # what expanduser and Path.home read, whatever ``env`` is
    key = (value, user_home)
    found = _HOMES.get(key) if user_home is not None else None
    if found is not None:
        return found
    try:
        found = Path(value).expanduser() if value else Path.home() / ".crab"
    except RuntimeError:  # no $HOME and no passwd entry (a container's arbitrary uid)
        from crab._contracts.errors import ConfigError

        raise ConfigError(
            f"cannot tell your home folder: set ${HOME} (or $HOME) to the folder crab keeps its files in"
        ) from None
    if user_home is not None:
        if len(_HOMES) >= _HOMES_MAX:
            _HOMES.clear()  # one entry per home a process uses: many means tests came and went
        _HOMES[key] = found
    return found


_HOMES: dict[tuple[str | None, str | None], Path] = {}
_HOMES_MAX = 64


def crab_variables(env: Mapping[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """Every ``CRAB_*`` variable set, sorted: what a config read in this process depended on
    (``crab.testing.run_cli`` adds plugins' sub-commands again when it changes)."""
    return tuple(sorted((k, v) for k, v in _env(env).items() if k.startswith("CRAB_")))


def plugin_list(env: Mapping[str, str] | None = None) -> str | None:
    """The raw ``CRAB_PLUGINS`` value, or None when it is not set (an empty value means no plugins)."""
    return _env(env).get(PLUGINS)


def strict_plugins(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``CRAB_STRICT_PLUGINS=1`` asks for plugin failures to end the command."""
    return _env(env).get(STRICT_PLUGINS) == "1"


def config_overrides(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{dotted key: raw text}`` for every ``CONFIG_VARIABLES`` entry that is set and not empty."""
    environ = _env(env)
    return {key: environ[var] for var, key in CONFIG_VARIABLES.items() if environ.get(var)}
