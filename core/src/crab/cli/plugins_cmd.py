"""``crab plugins list|enable|disable``: statuses, and edits to ``[plugins]`` that keep comments."""

from __future__ import annotations

import json

import typer

from crab.errors import CrabError


def list_plugins(plugins: str | None, as_json: bool) -> None:
    """Load what is enabled, run every registration hook, and show each plugin's status."""
    from crab.cli.runtime import build_host, load_cli_config, strict_exit
    from crab.config import Config, user_config_path

    try:
        config = load_cli_config()
        config_error = None
    except CrabError as exc:  # still list plugins with a broken config
        config, config_error = Config(data={}, user_path=user_config_path(), project_path=None), str(exc)
    host = build_host(config, plugins, validate=False, strict=False)
    host.collect_all()
    records = list(host.records.values())
    if as_json:
        typer.echo(json.dumps([r.to_dict() for r in records], indent=2))
    else:
        width = max(len(r.name) for r in records)
        for record in records:
            dist = f"{record.distribution or '-'} {record.version or ''}".strip()
            typer.echo(f"{record.name:<{width}}  {record.status:<8}  {dist}")
            if record.reason:
                typer.echo(f"{'':<{width}}  ↳ {record.reason}")
            elif record.hooks:
                typer.echo(f"{'':<{width}}  hooks: {', '.join(record.hooks)}")
            for fault in record.faults:
                typer.echo(f"{'':<{width}}  ↳ {fault}")
    if config_error:
        typer.echo(f"crab: {config_error}", err=True)
    strict_exit(host)


def set_enabled(name: str, enable: bool, project: bool, user: bool) -> None:
    from crab.cli.runtime import load_cli_config
    from crab.config import update_plugin_lists
    from crab.errors import UsageError

    if project and user:
        raise UsageError("--project and --user: pick one")
    config = load_cli_config()
    path = config.path_for("project" if project else "user" if user else None)
    update_plugin_lists(path, name, enable)
    typer.echo(f"{'enabled' if enable else 'disabled'} {name} in {path}")
