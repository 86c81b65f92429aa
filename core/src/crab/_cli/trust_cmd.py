"""``crab trust [PATH]``, ``crab trust --list``, ``crab untrust [PATH]``: the user's word on a project config."""

from __future__ import annotations

from pathlib import Path

import typer

from crab._config.paths import find_project_dir
from crab._config.trust import digest, read_records
from crab._contracts.config import TrustStatus
from crab._contracts.errors import ConfigError


def trust_project(path: Path | None, show_list: bool) -> None:
    from crab._config import trust

    if show_list:
        if path is not None:
            from crab._contracts.errors import UsageError

            raise UsageError("crab trust --list takes no PATH")
        rows = _listing()
        if not rows:
            typer.echo("no trusted projects (crab trust [PATH] trusts one)")
        for config_path, when, status in rows:
            note = {"trusted": "", "changed": "  (changed since trusted: not trusted now)", "untrusted": "  (missing)"}
            typer.echo(f"{trust.project_root(config_path)}  {when}{note[status]}")
        return
    config_path = _find_config(path or Path.cwd())
    state = trust.trust(config_path)
    typer.echo(f"trusted {config_path} (sha256 {state.sha256[:12]}…); editing it makes it untrusted again")


def untrust_project(path: Path | None) -> None:
    from crab._config import trust

    config_path = _find_config(path or Path.cwd())
    if trust.untrust(config_path):
        typer.echo(f"no longer trusted: {config_path}")
    else:
        typer.echo(f"{config_path} was not trusted")


def _find_config(start: Path) -> Path:
    """The project config ``crab trust PATH`` means: PATH's nearest ``.crab/config.toml`` upwards."""
    start = start.expanduser()
    if start.is_file() and start.name == "config.toml" and start.parent.name == ".crab":
        start = start.parent.parent
    elif start.name == ".crab" and start.is_dir():
        start = start.parent
    if not start.is_dir():
        raise ConfigError(f"crab trust: no such folder {start}")
    found = find_project_dir(start)
    if found is None:
        raise ConfigError(f"crab trust: no .crab/config.toml in {start.resolve()} or above; nothing to trust")
    return found / "config.toml"


def _listing() -> list[tuple[Path, str, TrustStatus]]:
    """Every recorded project: (config path, trusted at, trusted/changed/untrusted-as-missing)."""
    rows: list[tuple[Path, str, TrustStatus]] = []
    for name, record in sorted(read_records().items()):
        path = Path(name)
        try:
            status: TrustStatus = "trusted" if digest(path.read_bytes()) == record["sha256"] else "changed"
        except OSError:
            status = "untrusted"
        rows.append((path, str(record.get("trusted_at", "")), status))
    return rows
