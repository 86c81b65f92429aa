"""``crab trust [PATH]``, ``crab trust --list``, ``crab untrust [PATH]``: the user's word on a project config."""

from __future__ import annotations

from pathlib import Path

import typer


def trust_project(path: Path | None, show_list: bool) -> None:
    from crab._config import trust

    if show_list:
        if path is not None:
            from crab._contracts.errors import UsageError

            raise UsageError("crab trust --list takes no PATH")
        rows = trust.listing()
        if not rows:
            typer.echo("no trusted projects (crab trust [PATH] trusts one)")
        for config_path, when, status in rows:
            note = {"trusted": "", "changed": "  (changed since trusted: not trusted now)", "untrusted": "  (missing)"}
            typer.echo(f"{trust.project_root(config_path)}  {when}{note[status]}")
        return
    config_path = trust.find_config(path or Path.cwd())
    state = trust.trust(config_path)
    typer.echo(f"trusted {config_path} (sha256 {state.sha256[:12]}…); editing it makes it untrusted again")


def untrust_project(path: Path | None) -> None:
    from crab._config import trust

    config_path = trust.find_config(path or Path.cwd())
    if trust.untrust(config_path):
        typer.echo(f"no longer trusted: {config_path}")
    else:
        typer.echo(f"{config_path} was not trusted")
