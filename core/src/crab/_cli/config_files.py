"""Writing config files (``crab config set``, ``crab plugins enable|disable|install|uninstall``) through
``tomlkit``, so comments and order survive; a malformed file is reported and nothing written."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from crab._config.layers import read_toml, split_key
from crab._contracts.errors import ConfigError


def target_file(scope: Literal["user", "project"] | None, project_path: Path | None) -> Path:
    """The file a write goes to: the given scope's, else the project's if there is one."""
    from crab._config.paths import user_config_path

    if scope == "user" or (scope is None and project_path is None):
        return user_config_path()
    return project_path or Path.cwd() / ".crab" / "config.toml"


def _edit(path: Path, change: Callable[[Any], bool]) -> bool:
    """Let ``change`` edit ``path``'s tomlkit document; write it back when it says it changed it."""
    import tomlkit

    from crab._system.atomic import write_atomic

    read_toml(path)  # raises with the location when malformed
    doc = tomlkit.parse(path.read_text(encoding="utf-8") if path.exists() else "")
    if not change(doc):
        return False
    write_atomic(path, tomlkit.dumps(doc).encode("utf-8"))
    return True


def edit_config(path: Path, key: str, value: Any) -> None:
    """Set one dotted key in ``path``."""
    import tomlkit

    def change(doc: Any) -> bool:
        parts = split_key(key)
        node = doc
        for part in parts[:-1]:
            if part not in node:
                node[part] = tomlkit.table()
            node = node[part]
            if not isinstance(node, Mapping):
                raise ConfigError(f"config: {key} cannot be set: {part} is not a table in {path}")
        node[parts[-1]] = value
        return True

    _edit(path, change)


def update_plugin_lists(path: Path, name: str, enable: bool) -> None:
    """``crab plugins enable|disable``: edit ``[plugins]`` enabled/disabled in place."""
    import tomlkit

    def change(doc: Any) -> bool:
        if "plugins" not in doc:
            doc["plugins"] = tomlkit.table()
        plugins = doc["plugins"]
        disabled = plugins.get("disabled")
        enabled = plugins.get("enabled")
        if enable:
            if disabled is not None and name in disabled:
                disabled.remove(name)
            if enabled is not None and name not in enabled:
                enabled.append(name)
        else:
            if enabled is not None and name in enabled:
                enabled.remove(name)
            if disabled is None:
                plugins["disabled"] = [name]
            elif name not in disabled:
                disabled.append(name)
        return True

    _edit(path, change)


def forget_plugin(path: Path, name: str) -> bool:
    """``crab plugins uninstall``: drop ``name`` from ``[plugins]`` enabled and disabled, in place.

    Returns whether the file named it; a file that does not is left untouched.
    """

    def change(doc: Any) -> bool:
        plugins = doc.get("plugins")
        changed = False
        for key in ("enabled", "disabled"):
            names = plugins.get(key) if plugins is not None else None
            while names is not None and name in names:
                names.remove(name)
                changed = True
        return changed

    return _edit(path, change)
