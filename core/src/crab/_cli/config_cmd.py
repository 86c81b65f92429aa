"""``crab config show|keys|get|set|path``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import typer

from crab._config.layers import parse_value
from crab._config.paths import find_project_dir, user_config_path

if TYPE_CHECKING:
    from crab._contracts.config import Config, ConfigTable


def _checked_config(quiet: bool = False) -> Config:
    """The config with every loaded plugin's table checked and defaults filled; notes go to stderr."""
    from crab._assembly.choosing import build_host
    from crab._config.layers import load_config

    config = load_config()
    build_host(config)
    for line in [] if quiet else config.notices():
        typer.echo(f"warning: {line}", err=True)
    return config


def _masked(config: Config) -> Any:
    """What ``show`` and ``get`` print: the config with every secret crab knows masked."""
    from crab._secrets.keys import known_secrets
    from crab._secrets.redaction import Redactor

    return Redactor(known_secrets(config)).payload


def show(as_json: bool) -> None:
    config = _checked_config()
    mask = _masked(config)
    if as_json:
        typer.echo(json.dumps(mask(config.data), indent=2, default=str))
        return
    for key, value in _leaves("", config.data):
        typer.echo(f"{key} = {json.dumps(mask(value), default=str)}")


def _leaves(prefix: str, node: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """Every leaf as (dotted key, value), in file order."""
    for key, value in node.items():
        dotted = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping) and value:
            yield from _leaves(dotted, value)
        else:
            yield dotted, value


def _tables(plugins: str | None) -> list[ConfigTable]:
    from crab._assembly.choosing import build_host, declared_tables
    from crab._config.core_tables import CORE_TABLE, SERVE_TABLE
    from crab._config.layers import load_config
    from crab._contracts.config import Config
    from crab._contracts.errors import CrabError

    try:
        config = load_config()
    except CrabError as exc:  # the declarations do not depend on the values
        typer.echo(f"crab: {exc}", err=True)
        config = Config(data={}, user_path=user_config_path(), project_path=None)
    host = build_host(config, plugins, validate=False)
    return [CORE_TABLE, SERVE_TABLE, *declared_tables(host)]


def keys(plugins: str | None, as_json: bool) -> None:
    """Every declared key of ``[crab]`` and of each loaded plugin's table."""
    from crab._contracts.config import format_key, show_value

    tables = _tables(plugins)
    if as_json:
        rows: list[dict[str, Any]] = [
            {
                "table": format_key(t.path),
                "key": s.name,
                "type": s.kind,
                "default": s.default,
                "expected": s.expected,
                "trust": s.trust or None,
                "doc": s.doc,
            }
            for t in tables
            for s in t.settings
        ]
        typer.echo(json.dumps(rows, indent=2, default=str))
        return

    def shown(default: Any) -> str:
        if default is None:
            return "-"
        return "{}" if default == {} else show_value(default)

    for table in tables:
        typer.echo(f"[{format_key(table.path)}]" + (f"  # {table.doc}" if table.doc else ""))
        width = max((len(s.name) for s in table.settings), default=0)
        value_width = max((len(shown(s.default)) for s in table.settings), default=0)
        for s in table.settings:
            trust = f" ({s.trust})" if s.trust else ""
            typer.echo(f"  {s.name:<{width}}  {s.kind:<9}  {shown(s.default):<{value_width}}  {s.doc}{trust}")


def get(key: str) -> None:
    from crab._contracts.errors import ConfigError

    config = _checked_config()
    marker = object()
    value = config.get(key, marker)
    if value is marker:
        raise ConfigError(f"{key} is not set (see `crab config show`)")
    value = _masked(config)(value)
    typer.echo(value if isinstance(value, str) else json.dumps(value, default=str))


def set_value(key: str, value: str, project: bool, user: bool) -> None:
    """Write one key; a value the declarations refuse puts a valid file back as it was.

    A file that was already broken keeps the edit (it may be the fix) and the remaining problem is
    reported. Setting a key in a trusted project's file through crab keeps it trusted (the user's
    own word); a file that had changed since it was trusted stays untrusted.
    """
    from crab._cli.config_files import edit_config, target_file
    from crab._config import trust
    from crab._contracts.errors import CrabError, UsageError
    from crab._system.atomic import write_atomic

    if project and user:
        raise UsageError("--project and --user: pick one")
    project_dir = find_project_dir()
    project_path = project_dir / "config.toml" if project_dir else None
    path = target_file("project" if project else "user" if user else None, project_path)
    before = path.read_bytes() if path.exists() else None
    was_trusted = path == project_path and before is not None and trust.state_for(path, before).trusted
    try:
        _checked_config(quiet=True)
        valid_before = True
    except CrabError:
        valid_before = False
    edit_config(path, key, parse_value(value))
    if was_trusted:
        trust.trust(path)
    try:
        _checked_config()
    except CrabError:
        if valid_before:
            if before is None:
                path.unlink()
            else:
                write_atomic(path, before)
        raise
    finally:
        if was_trusted:
            trust.trust(path)
    typer.echo(f"set {key} in {path}")
    if path == project_path and not was_trusted:
        sys.stderr.write(f"note: trust-only keys in this project file apply after `{trust.trust_command(path)}`\n")


def paths() -> None:
    project = find_project_dir()
    typer.echo(f"user:    {user_config_path()}")
    typer.echo(f"project: {project / 'config.toml' if project else '(none: create .crab/config.toml)'}")
    typer.echo(f"trust:   {_trust_file()}")


def _trust_file() -> str:
    from crab._config.trust import trust_file

    return str(trust_file())
