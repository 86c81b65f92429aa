"""``crab sandbox check`` and crab-sandbox's ``crab doctor`` line: the probe's answer, and the policy
a command in this workspace gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from crab_sandbox import bwrap, policy, runtime, sockets
from crab_sandbox.settings import user_home


def _home(path: Path) -> str:
    home = user_home()
    return f"~/{path.relative_to(home).as_posix()}" if home is not None and home in path.parents else str(path)


def check(config: Any) -> int:
    """Print whether the sandbox starts here and what it allows; 0 when it works, 1 when not."""
    settings = runtime.settings_for(config, Path.cwd())
    found = bwrap.probe(settings.bwrap)
    state = "works" if found.works else "does NOT work"
    typer.echo(f"sandbox: {state} here: {found.reason}")
    typer.echo(f"mode: {settings.mode}" + (" (tools' commands run unsandboxed)" if settings.mode == "off" else ""))
    if not found.works:
        what = "are refused" if settings.mode == "required" else "run unsandboxed, with a warning"
        typer.echo(f"until it does, tools' commands {what}")
    writable = ", ".join(str(p) for p in (Path.cwd(), *settings.writable))
    typer.echo(f"writable: {writable} (the workspace), and a private /tmp; the rest is read-only")
    hidden = ", ".join(_home(p) for p in settings.hidden if p.exists())
    typer.echo(f"hidden here: {hidden or 'none of the listed paths exist'}")
    network = "on for every command" if settings.network else "off, except for calls of network-permission tools"
    typer.echo(f"network: {network}")
    typer.echo(f"host unix sockets covered: {_sockets(settings)}")
    return 0 if found.works else 1


def _sockets(settings: Any) -> str:
    """The host's unix sockets a command here would find covered, and those let through."""
    _, facts = policy.build(
        "bwrap",
        ["true"],
        workspace=Path.cwd(),
        cwd=None,
        settings=settings,
        env={},
        secrets=(),
        network=False,
        unreadable=Path("/dev/null"),
        sockets=sockets.host_sockets(),
    )
    shown = ", ".join(str(p) for p in facts.sockets[:5]) + (", ..." if len(facts.sockets) > 5 else "")
    said = f"{len(facts.sockets)}" + (f" ({shown})" if facts.sockets else "")
    if settings.unix_sockets:
        said += "; let through (unix_sockets): " + ", ".join(str(p) for p in settings.unix_sockets)
    return said


def doctor_lines(config: Any) -> list[tuple[str, str]]:
    """``crab doctor``'s line: ok when the sandbox works (or is off), fail when ``required`` cannot start."""
    settings = runtime.settings_for(config, Path.cwd())
    if settings.mode == "off":
        return [
            ("note", 'sandbox: mode off (tools\' commands run unsandboxed); [plugins.sandbox] mode = "on" to use it')
        ]
    found = bwrap.probe(settings.bwrap)
    if found.works:
        return [("ok", f"sandbox: {found.reason} (mode {settings.mode})")]
    if settings.mode == "required":
        return [("fail", f"sandbox: does not work here, so tools' commands are refused: {found.reason}")]
    return [("note", f"sandbox: does not work here, tools' commands run unsandboxed: {found.reason}")]
