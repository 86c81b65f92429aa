"""``crab config show|get|set|path``."""

from __future__ import annotations

import json

import typer

from crab.config import find_project_dir, parse_value, user_config_path


def show(as_json: bool) -> None:
    from crab.cli.runtime import load_cli_config

    config = load_cli_config()
    if as_json:
        typer.echo(json.dumps(config.data, indent=2, default=str))
        return
    for key, value in config.items():
        typer.echo(f"{key} = {json.dumps(value, default=str)}")


def get(key: str) -> None:
    from crab.cli.runtime import load_cli_config
    from crab.errors import ConfigError

    config = load_cli_config()
    marker = object()
    value = config.get(key, marker)
    if value is marker:
        raise ConfigError(f"{key} is not set (see `crab config show`)")
    typer.echo(value if isinstance(value, str) else json.dumps(value, default=str))


def set_value(key: str, value: str, project: bool, user: bool) -> None:
    from crab.cli.runtime import load_cli_config
    from crab.config import edit_config
    from crab.errors import UsageError

    if project and user:
        raise UsageError("--project and --user: pick one")
    config = load_cli_config()
    path = config.path_for("project" if project else "user" if user else None)
    edit_config(path, key, parse_value(value))
    load_cli_config()  # the new value must still give a valid config; if not, say so now
    typer.echo(f"set {key} in {path}")


def paths() -> None:
    project = find_project_dir()
    typer.echo(f"user:    {user_config_path()}")
    typer.echo(f"project: {project / 'config.toml' if project else '(none: create .crab/config.toml)'}")
