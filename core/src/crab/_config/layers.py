"""Layered configuration (user file, project file, environment, command line), each value with its
source, an untrusted project's trust-only keys dropped (docs/configuration.md, docs/security.md)."""

from __future__ import annotations

import copy
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from crab._config import environ
from crab._config.core_tables import CORE_TABLE, SERVE_TABLE
from crab._config.paths import find_project_dir, user_config_path
from crab._contracts.config import Config, ConfigTable, InvalidValue, Layer, Parts, format_key
from crab._contracts.errors import ConfigError

TOP_LEVEL = ("crab", "plugins", "serve")
ENABLED: Parts = ("plugins", "enabled")
"""Which plugins load is the user's word: an untrusted project's list is ignored (it could load
a plugin the user switched off, or, listing only some, switch off the rest unseen)."""
DISABLED: Parts = ("plugins", "disabled")
"""An untrusted project may switch plugins off (narrowing is never trust-only): its names are
added to the user's, never put in their place, and ``project_disabled`` names them in a notice."""


_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)")


CONFIG_LIMIT = 1 << 20
"""Bytes a config file may hold: a file bigger than this is not a config someone wrote."""


class NotAFile(ConfigError):
    """A config path names a folder, a FIFO or a device: reading it could hang or mean nothing."""


def _kind(mode: int) -> str:
    import stat

    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _read_bytes(path: Path) -> bytes | None:
    """The bytes of config file ``path`` (None when there is none); refuses what is not a regular
    file (a FIFO would block crab forever) and a file over ``CONFIG_LIMIT`` bytes."""
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise NotAFile(f"{path}: cannot read config: it is {_kind(mode)}, not a file (make it a TOML file)")
        # Non-blocking: a FIFO put there after the check must not hold the open; fstat checks again.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotAFile(f"{path}: cannot read config: it is {_kind(mode)}, not a file (make it a TOML file)")
        chunks: list[bytes] = []
        size = 0
        while size <= CONFIG_LIMIT:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > CONFIG_LIMIT:
        raise ConfigError(
            f"{path}: cannot read config: it is over {CONFIG_LIMIT >> 20} MiB (a config is a short TOML file)"
        )
    return b"".join(chunks)


def parse_toml(content: bytes, path: Path) -> dict[str, Any]:
    """Parse ``content`` read from ``path``; errors become ``ConfigError("path:line:col: message")``."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from None
    import tomllib  # only once a file exists: its regexes cost a command with no config ~5 ms

    try:
        return tomllib.loads(text)
    except RecursionError:  # tomllib recurses into nested arrays and inline tables
        raise ConfigError(f"{path}: invalid TOML: nested too deeply (fix the file; nothing was changed)") from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        where = _TOML_POSITION.search(message)
        reason = _TOML_POSITION.sub("", message).strip()
        line, col = (where.group(1), where.group(2)) if where else ("?", "?")
        raise ConfigError(f"{path}:{line}:{col}: invalid TOML: {reason} (fix the file; nothing was changed)") from None


def read_toml(path: Path) -> dict[str, Any]:
    """Parse ``path`` (empty when missing); a syntax error names ``path:line:col``."""
    content = _read_bytes(path)
    return {} if content is None else parse_toml(content, path)


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
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return text


def set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    set_path(data, split_key(key), value)


def set_path(data: dict[str, Any], parts: Sequence[str], value: Any) -> None:
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


_MISSING = object()


def get_path(data: Any, parts: Sequence[str], default: Any = None) -> Any:
    """The value at ``parts`` in nested tables, else ``default``."""
    node = data
    for part in parts:
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


def _remove_path(data: dict[str, Any], parts: Sequence[str]) -> None:
    node: Any = data
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(parts[-1], None)


def split_key(key: str) -> list[str]:
    if not key or any(not p for p in key.split(".")):
        raise ConfigError(f"invalid config key {key!r}: use dotted names like crab.model")
    return key.split(".")


def merge_layers(layers: Iterable[Layer]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = deep_merge(merged, layer.data)
    return merged


def validate_table(table: ConfigTable, raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """A plugin's raw table checked and filled with defaults (for code handed an unchecked table)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise InvalidValue(table.path, "a table", raw)
    values, _ = table.validate(raw)
    return values


def untrusted_keys(
    project: Mapping[str, Any], below: Mapping[str, Any], trusted: Mapping[str, Any], tables: Iterable[ConfigTable]
) -> list[Parts]:
    """Keys an untrusted project layer sets that it may not: trust-only keys, values wider than
    what the layers below give (``trust_order``), and what each table's ``trust_filter`` names."""
    drops: list[Parts] = []
    for table in tables:
        own = get_path(project, table.path)
        if not isinstance(own, Mapping):
            continue
        for setting in table.settings:
            if setting.name not in own:
                continue
            old = get_path(below, (*table.path, setting.name), setting.default)
            if setting.trust_only or _widens(setting.trust_order, own[setting.name], old):
                drops.append((*table.path, setting.name))
        if table.trust_filter is not None:
            base = get_path(trusted, table.path)
            for relative in table.trust_filter(own, base if isinstance(base, Mapping) else {}):
                parts = (*table.path, *relative)
                if parts not in drops:
                    drops.append(parts)
    return drops


def _widens(order: Sequence[Any], new: Any, old: Any) -> bool:
    """Whether ``new`` grants more than ``old`` on a setting's ``trust_order`` (narrowest first)."""
    if new not in order:
        return False
    return old not in order or order.index(new) > order.index(old)


def _close_matches(word: str, options: Iterable[str]) -> str:
    import difflib

    found = difflib.get_close_matches(word, list(options), n=1)
    return f" (did you mean {found[0]}?)" if found else ""


class LayeredConfig(Config):
    """The config crab loads (``load_config``): its ``resolve`` merges the layers again and checks
    them against the declared tables, dropping what an untrusted project may not set."""

    def source_of(self, parts: Sequence[str]) -> str:
        """Which layer gave the value at ``parts`` (the last one that set it, or a parent of it)."""
        for layer in reversed(self._effective or self.layers):
            node: Any = layer.data
            for part in parts:
                if not isinstance(node, Mapping):
                    return layer.source
                if part not in node:
                    break
                node = node[part]
            else:
                return layer.source
        return "config"

    def resolve(self, tables: Iterable[ConfigTable] = (), plugins: Collection[str] | None = None) -> None:
        """``Config.resolve``: merge the layers, drop what an untrusted project may not set, check."""
        if not self.layers:
            return
        declared: dict[Parts, ConfigTable] = {CORE_TABLE.path: CORE_TABLE, SERVE_TABLE.path: SERVE_TABLE}
        for table in tables:
            declared[table.path] = table
        effective = list(self.layers)
        self.ignored = []
        self.project_disabled = []
        project_at = next((i for i, layer in enumerate(effective) if layer.kind == "project"), None)
        if project_at is not None and not (self.trust is not None and self.trust.trusted):
            project = effective[project_at]
            drops = untrusted_keys(
                project.data,
                merge_layers(effective[:project_at]),
                merge_layers(layer for layer in effective if layer.kind != "project"),
                declared.values(),
            )
            if get_path(project.data, ENABLED, _MISSING) is not _MISSING:
                drops.append(ENABLED)
            own = get_path(project.data, DISABLED, _MISSING)
            added: list[str] = []
            if isinstance(own, list) and all(isinstance(v, str) for v in own):
                below = get_path(merge_layers(effective[:project_at]), DISABLED, [])
                below = list(below) if isinstance(below, list) else []
                added = [name for name in dict.fromkeys(own) if name not in below and name not in self.kept_guards]
            self.project_disabled = added
            if drops or added:
                kept = copy.deepcopy(project.data)
                for parts in drops:
                    _remove_path(kept, parts)
                if added:
                    set_path(kept, DISABLED, [*below, *added])  # the user's names stay off
                effective[project_at] = replace(project, data=kept)
                later = merge_layers(effective[project_at + 1 :])
                self.ignored = [format_key(p) for p in drops if get_path(later, p, _MISSING) is _MISSING]
        self._effective = effective
        for layer in effective:  # a later layer's table would hide an earlier layer's non-table
            for path in (("plugins",), *declared):
                for end in range(1, len(path) + 1):
                    value = get_path(layer.data, path[:end], _MISSING)
                    if value is not _MISSING and not isinstance(value, Mapping):
                        raise InvalidValue(path[:end], "a table", value, layer.source)
        merged = merge_layers(effective)
        self.warnings = list(self.unread)
        for key in merged:
            if key not in TOP_LEVEL:
                self.warnings.append(
                    f"{self.source_of((key,))}: {format_key((key,))} is not a crab setting"
                    f"{_close_matches(key, TOP_LEVEL)}; it is ignored"
                )
        self._check_plugin_lists(merged)
        for path, table in declared.items():
            raw = get_path(merged, path, {})
            if not isinstance(raw, Mapping):
                raise InvalidValue(path, "a table", raw, self.source_of(path))
            try:
                values, unknown = table.validate(raw)
            except InvalidValue as exc:
                raise exc.at(self.source_of(exc.key)) from None
            except ConfigError as exc:
                raise ConfigError(f"{self.source_of(path)}: {exc}") from None
            for key in unknown:
                self.warnings.append(
                    f"{self.source_of((*path, key))}: {format_key((*path, key))} is not a setting of "
                    f"[{format_key(path)}]{_close_matches(key, (s.name for s in table.settings))}; it is ignored "
                    "(see `crab config keys`)"
                )
            set_path(merged, path, values)
        if plugins is not None:
            self._check_plugin_names(merged, plugins)
        self.data = merged
        self.tables = declared

    def _check_plugin_names(self, merged: Mapping[str, Any], plugins: Collection[str]) -> None:
        for name, value in merged.get("plugins", {}).items():
            if isinstance(value, Mapping) and name not in plugins:
                path = ("plugins", name)
                self.warnings.append(
                    f"{self.source_of(path)}: [{format_key(path)}] is the table of no installed plugin"
                    f"{_close_matches(name, plugins)}; it is ignored (see `crab plugins list`)"
                )

    def _check_plugin_lists(self, merged: Mapping[str, Any]) -> None:
        plugins = merged.get("plugins", {})
        if not isinstance(plugins, Mapping):
            raise InvalidValue(("plugins",), "a table", plugins, self.source_of(("plugins",)))
        for key in ("enabled", "disabled"):
            value = plugins.get(key)
            if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
                where = ("plugins", key)
                raise InvalidValue(where, 'a list of plugin names, like ["tools-basic"]', value, self.source_of(where))


def load_config(
    cwd: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    overrides_source: str = "--set",
    user: bool = True,
    project: bool = True,
) -> Config:
    """Layer the user file, project file, environment and ``overrides`` (dotted keys), and check ``[crab]``.

    The project file is read once: the bytes parsed are the bytes whose hash decides its trust.
    ``user=False`` or ``project=False`` leaves that file out (a program that wants none of them;
    ``env={}`` leaves the environment out).
    """
    user_path = user_config_path()
    project_dir = find_project_dir(cwd) if project else None
    project_path = project_dir / "config.toml" if project_dir else None
    layers = [Layer("user", f"user config {user_path}", read_toml(user_path) if user else {})]
    trust = None
    unread: list[str] = []
    if project_path is not None:
        from crab._config.trust import state_for

        try:
            content = _read_bytes(project_path) or b""
        except NotAFile as exc:
            # A project's folder or device is no config: said once, and the project sets nothing.
            unread.append(f"{exc}; it is ignored")
            project_path = None
        else:
            layers.append(Layer("project", f"project config {project_path}", parse_toml(content, project_path)))
            trust = state_for(project_path, content)
    variable_of = {key: var for var, key in environ.CONFIG_VARIABLES.items()}
    for key, text in environ.config_overrides(env).items():
        setting = CORE_TABLE.setting(key.split(".", 1)[1])
        value = text if setting is None or setting.kind == "str" else parse_value(text)
        data: dict[str, Any] = {}
        set_dotted(data, key, value)
        layers.append(Layer("env", f"environment variable {variable_of[key]}", data))
    flags: dict[str, Any] = {}
    for key, value in (overrides or {}).items():
        set_dotted(flags, key, value)
    if flags:
        layers.append(Layer("flag", overrides_source, flags))
    config = LayeredConfig(
        data={}, user_path=user_path, project_path=project_path, layers=layers, trust=trust, unread=unread
    )
    config.resolve()
    return config


@dataclass(frozen=True)
class PluginTable:
    """Typed reads of one table under ``[plugins]`` that no declaration covers (a nested table).

    ``plugin`` is the path below ``plugins`` (``provider-openai.endpoints.local``). A missing key
    gives the default; a bad value raises ``InvalidValue`` in the same one-line format as a
    declared table's, and ``Config.resolve`` adds the file it came from.
    """

    plugin: str
    table: Mapping[str, Any]

    def key(self, key: str) -> Parts:
        return ("plugins", *self.plugin.split("."), key)

    def where(self, key: str) -> str:
        return f"config: {format_key(self.key(key))}"

    def invalid(self, key: str, expected: str, found: Any) -> InvalidValue:
        return InvalidValue(self.key(key), expected, found)

    def number(self, key: str, default: float, *, minimum: float = 0.0) -> float:
        value = self.table.get(key, default)
        # ``value - value == 0`` leaves out TOML's nan (which passes ``< minimum``) and inf.
        if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum or value - value != 0:
            raise self.invalid(key, f"a number >= {minimum:g}", value)
        return float(value)

    def whole(self, key: str, default: int, *, minimum: int = 0) -> int:
        value = self.table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.invalid(key, f"a whole number >= {minimum}", value)
        return value

    def text(self, key: str, default: str) -> str:
        value = self.table.get(key, default)
        if not isinstance(value, str):
            raise self.invalid(key, "a string", value)
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.table.get(key, default)
        if not isinstance(value, bool):
            raise self.invalid(key, "true or false", value)
        return value
