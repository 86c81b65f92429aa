"""Layered configuration: user file, project file, environment, command line.

Reading uses ``tomllib``; writing (``crab config set``, ``crab plugins enable``) goes through
``tomlkit`` so comments and order survive. A malformed file is reported as ``path:line:col`` and
nothing is overwritten.
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from crab import environ
from crab.atomic import write_atomic
from crab.errors import ConfigError

Scope = Literal["user", "project"]

ENV_KEYS: dict[str, str] = environ.CONFIG_VARIABLES
"""Environment variables that override ``[crab]`` keys (read in ``crab.environ``)."""

DEFAULTS: dict[str, Any] = {
    "crab": {
        "permissions": "ask",
        "max_iterations": 25,
        "tool_timeout": 120.0,
    }
}


def crab_home() -> Path:
    """``$CRAB_HOME`` or ``~/.crab``: user config, auth file, sessions."""
    return environ.crab_home()


def user_config_path() -> Path:
    return crab_home() / "config.toml"


def find_project_dir(start: Path | None = None) -> Path | None:
    """The nearest ``.crab`` folder holding a ``config.toml``, from ``start`` (cwd) upwards.

    The user's own ``CRAB_HOME`` is not a project folder.
    """
    here = (start or Path.cwd()).resolve()
    home = crab_home().resolve()
    for folder in (here, *here.parents):
        candidate = folder / ".crab"
        if candidate.resolve() != home and (candidate / "config.toml").is_file():
            return candidate
    return None


_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


def read_toml(path: Path) -> dict[str, Any]:
    """Parse ``path``; a syntax error becomes ``ConfigError("path:line:col: message")``."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        where = _TOML_POSITION.search(message)
        reason = _TOML_POSITION.sub("", message).strip()
        line, col = (where.group(1), where.group(2)) if where else ("?", "?")
        raise ConfigError(f"{path}:{line}:{col}: invalid TOML: {reason} (fix the file; nothing was changed)") from None


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` wins; tables merge key by key, everything else is replaced."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def parse_value(text: str) -> Any:
    """A command-line value as TOML would read it (``true``, ``3``, ``[1, 2]``), else a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def _split_key(key: str) -> list[str]:
    if not key or any(not p for p in key.split(".")):
        raise ConfigError(f"invalid config key {key!r}: use dotted names like crab.model")
    return key.split(".")


@dataclass
class Config:
    """The merged configuration and where each layer came from."""

    data: dict[str, Any]
    user_path: Path
    project_path: Path | None
    overrides: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in _split_key(key):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node

    def plugin_settings(self, name: str) -> Mapping[str, Any]:
        """The ``[plugins.<name>]`` table (empty when absent)."""
        table = self.get(f"plugins.{name}")
        return table if isinstance(table, Mapping) else {}

    def items(self) -> Iterator[tuple[str, Any]]:
        """Every leaf as (dotted key, value), in file order."""

        def walk(prefix: str, node: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
            for key, value in node.items():
                dotted = f"{prefix}.{key}" if prefix else key
                if isinstance(value, Mapping) and value:
                    yield from walk(dotted, value)
                else:
                    yield dotted, value

        return walk("", self.data)

    def path_for(self, scope: Scope | None) -> Path:
        """The file a write goes to: the given scope, else the project's if there is one."""
        if scope == "user" or (scope is None and self.project_path is None):
            return self.user_path
        if self.project_path is not None:
            return self.project_path
        return Path.cwd() / ".crab" / "config.toml"


def load_config(
    cwd: Path | None = None, overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Config:
    """Merge defaults, user file, project file, environment and ``overrides`` (dotted keys)."""
    user_path = user_config_path()
    project_dir = find_project_dir(cwd)
    project_path = project_dir / "config.toml" if project_dir else None
    data = deep_merge(copy.deepcopy(DEFAULTS), read_toml(user_path))
    if project_path is not None:
        data = deep_merge(data, read_toml(project_path))
    for key, text in environ.config_overrides(env).items():
        set_dotted(data, key, parse_value(text) if key.endswith(("iterations", "timeout")) else text)
    flat = dict(overrides or {})
    for key, value in flat.items():
        _split_key(key)
        set_dotted(data, key, value)
    _check_shape(data)
    return Config(data=data, user_path=user_path, project_path=project_path, overrides=flat)


def _check_shape(data: Mapping[str, Any]) -> None:
    plugins = data.get("plugins", {})
    if not isinstance(plugins, Mapping):
        raise ConfigError("config: [plugins] must be a table")
    for key in ("enabled", "disabled"):
        value = plugins.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise ConfigError(f'config: plugins.{key} must be a list of plugin names, like ["tools-basic"]')
    crab = data.get("crab", {})
    if not isinstance(crab, Mapping):
        raise ConfigError("config: [crab] must be a table")
    if crab.get("permissions") not in ("ask", "yolo", "read-only"):
        raise ConfigError(
            f'config: crab.permissions must be "ask", "yolo" or "read-only", not {crab.get("permissions")!r}'
        )
    for key in ("max_iterations", "tool_timeout"):
        value = crab.get(key)
        if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
            raise ConfigError(f"config: crab.{key} must be a positive number, not {value!r}")


@dataclass(frozen=True)
class PluginTable:
    """Typed reads of one ``[plugins.<plugin>]`` config table.

    A missing key gives the default; a bad value is a one-line ``ConfigError`` naming the key.
    """

    plugin: str
    table: Mapping[str, Any]

    def where(self, key: str) -> str:
        return f"config: plugins.{self.plugin}.{key}"

    def number(self, key: str, default: float, *, minimum: float = 0.0) -> float:
        value = self.table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
            raise ConfigError(f"{self.where(key)} must be a number of at least {minimum:g}, not {value!r}")
        return float(value)

    def whole(self, key: str, default: int, *, minimum: int = 0) -> int:
        value = self.table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"{self.where(key)} must be a whole number of at least {minimum}, not {value!r}")
        return value

    def text(self, key: str, default: str) -> str:
        value = self.table.get(key, default)
        if not isinstance(value, str):
            raise ConfigError(f"{self.where(key)} must be a string, not {value!r}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.table.get(key, default)
        if not isinstance(value, bool):
            raise ConfigError(f"{self.where(key)} must be true or false, not {value!r}")
        return value


def edit_config(path: Path, key: str, value: Any = None, *, remove: bool = False) -> None:
    """Set (or remove) one dotted key in ``path`` with tomlkit, keeping comments and order.

    The file is parsed first; if it is malformed nothing is written. The write is atomic.
    """
    import tomlkit

    read_toml(path)  # raises with the location when malformed
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    doc = tomlkit.parse(text)
    parts = _split_key(key)
    node: Any = doc
    for part in parts[:-1]:
        if part not in node:
            if remove:
                return
            node[part] = tomlkit.table()
        node = node[part]
        if not isinstance(node, Mapping):
            raise ConfigError(f"config: {key} cannot be set: {part} is not a table in {path}")
    if remove:
        if parts[-1] in node:
            del node[parts[-1]]
    else:
        node[parts[-1]] = value
    write_atomic(path, tomlkit.dumps(doc).encode("utf-8"))


def update_plugin_lists(path: Path, name: str, enable: bool) -> None:
    """``crab plugins enable|disable``: edit ``[plugins]`` enabled/disabled in place."""
    import tomlkit

    read_toml(path)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    doc = tomlkit.parse(text)
    if "plugins" not in doc:
        doc["plugins"] = tomlkit.table()
    plugins: Any = doc["plugins"]
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
    write_atomic(path, tomlkit.dumps(doc).encode("utf-8"))
