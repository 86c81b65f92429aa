"""``crab mcp list | tools | add | serve``: the typer commands (their work lives in sibling modules).

``list`` and ``tools`` start the configured servers for a moment (in parallel, each bounded by
its connect timeout) to show what they offer; a server declared only in an untrusted project's
config is never started, and ``list`` says how to trust that project. ``add`` writes the user's
config through tomlkit. ``serve`` is ``crab_mcp.bridge``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from crab import Config

    from crab_mcp.manager import Manager
    from crab_mcp.settings import ServerConfig

PLUGIN = "mcp"
LIST_WIDTH = 160
"""Characters of a tool's first description line ``crab mcp tools`` shows."""


def redactor(config: Config) -> Any:
    """Masks every secret crab knows plus the values of the servers' ``${VAR}`` references."""
    import os

    from crab.secrets import Redactor, known_secrets

    from crab_mcp.settings import secret_values, server_configs

    values = list(known_secrets(config))
    for server in server_configs(config.plugin_settings(PLUGIN)):
        values.extend(secret_values(server, os.environ))
    return Redactor(values)


def visible(text: str) -> str:
    """``text`` with control characters other than newline and tab shown as ``^[`` or ``\\x9b``:
    a server's descriptions and errors must not retitle, clear or rewrite the terminal."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\n\t" or (0x20 <= code < 0x7F) or code > 0x9F:
            out.append(ch)
        elif code < 0x20 or code == 0x7F:
            out.append("^" + chr(code ^ 0x40))
        else:
            out.append(f"\\x{code:02x}")
    return "".join(out)


def printer(config: Config) -> Any:
    """``echo(text, err=False)`` that masks secrets (every printed byte is redacted) and shows
    control characters as visible text."""
    mask = redactor(config).text

    def echo(text: str, *, err: bool = False) -> None:
        typer.echo(visible(mask(text)), err=err)

    return echo


def summary(description: str) -> str:
    """A tool's first description line, cut at ``LIST_WIDTH`` characters (a server may send 100 KB)."""
    line = description.splitlines()[0] if description else ""
    return line if len(line) <= LIST_WIDTH else line[: LIST_WIDTH - 1] + "…"


def print_servers(config: Config, as_json: bool) -> None:
    """``crab mcp list``: one line (or JSON object) per server."""
    rows = server_rows(config)
    echo = printer(resolved(config))
    if as_json:
        echo(json.dumps(rows, indent=2))
        return
    if not rows:
        echo("no MCP servers configured (add one: crab mcp add NAME -- COMMAND ARGS…)")
        return
    width = max(len(r["name"]) for r in rows)
    for row in rows:
        detail = f"  {row['reason']}" if row["reason"] else ""
        echo(f"{row['name']:<{width}}  {row['status']:<9}  {row['transport']:<5}  {row['target']}{detail}")


def resolved(config: Config) -> Config:
    """``config`` checked against this plugin's table (trust-only keys of an untrusted project
    dropped): ``config`` itself when the host already did that, else a checked copy."""
    import dataclasses

    from crab_mcp.settings import TABLE

    if config.tables.get(TABLE.path) is not None:
        return config
    copy = dataclasses.replace(config)
    copy.resolve([TABLE])
    return copy


def untrusted_servers(config: Config) -> tuple[list[str], str]:
    """Servers an untrusted project config declares (they never start) and the command that trusts it."""
    trust = config.trust
    if trust is None or trust.trusted:
        return [], ""
    for layer in config.layers:
        if layer.kind != "project":
            continue
        servers = layer.data.get("plugins", {}).get(PLUGIN, {}).get("servers", {})
        if isinstance(servers, dict) and servers:
            return list(servers), trust.command
    return [], ""


def server_rows(config: Config) -> list[dict[str, Any]]:
    """One row per server: name, status, transport, target, reason, tool count."""
    import asyncio

    from crab_mcp.manager import Manager
    from crab_mcp.settings import server_configs

    config = resolved(config)
    configs = server_configs(config.plugin_settings(PLUGIN))
    manager = Manager.from_configs(configs)
    asyncio.run(_probe(manager))
    rows = []
    for c in configs:
        link = manager.links.get(c.name)
        if link is None:
            status, reason, count = "disabled", "enabled = false", 0
        else:
            status = "ready" if link.status in ("ready", "stopped") and not link.reason else "failed"
            reason, count = link.reason, len(link.tools)
            if status == "ready":
                reason = f"{sum(1 for t in link.tools if c.wants(t.name))} of {count} tools"
        rows.append(
            {"name": c.name, "status": status, "transport": c.transport, "target": c.target(), "reason": reason}
        )
    names, command = untrusted_servers(config)
    known = {c.name for c in configs}
    for name in names:
        if name in known:
            continue
        rows.append(
            {
                "name": name,
                "status": "untrusted",
                "transport": "-",
                "target": "-",
                "reason": f"declared in an untrusted project config, so it does not start; trust it with `{command}`",
            }
        )
    return rows


async def _probe(manager: Manager) -> None:
    try:
        await manager.start()
    finally:
        await manager.stop()


def show_tools(config: Config, only: str | None, as_json: bool) -> int:
    """Print the tools; 1 when the named server is unknown or did not start."""
    import asyncio

    from crab_mcp.manager import Manager
    from crab_mcp.settings import server_configs

    config = resolved(config)
    echo = printer(config)
    configs: list[ServerConfig] = [c for c in server_configs(config.plugin_settings(PLUGIN)) if c.enabled]
    if only is not None:
        configs = [c for c in configs if c.name == only]
        if not configs:
            echo(f"crab: no enabled MCP server named {only!r} (see `crab mcp list`)", err=True)
            return 1
    manager = Manager.from_configs(configs)
    asyncio.run(_probe(manager))
    code = 0
    for link in manager.links.values():
        if link.reason:
            echo(f"warning: MCP server {link.name!r} failed to start: {link.reason}", err=True)
            code = 1 if only is not None else code
    entries = list(manager.entries.values())
    if as_json:
        rows = [
            {
                "name": e.crab_name,
                "server": e.server,
                "mcp_name": e.remote,
                "permission": e.permission,
                "description": summary(e.description),
                "parameters": e.schema,
            }
            for e in entries
        ]
        echo(json.dumps(rows, indent=2))
        return code
    if not entries:
        echo("no MCP tools (see `crab mcp list`)")
        return code
    width = max(len(e.crab_name) for e in entries)
    for e in entries:
        mapped = f"  [MCP name: {e.remote}]" if e.mapped else ""
        echo(f"{e.crab_name:<{width}}  {e.permission:<7}  {summary(e.description)}{mapped}")
    return code
