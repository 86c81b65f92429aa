"""``crab mcp add`` and ``remove``: one ``[plugins.mcp.servers.<name>]`` table written into, or
deleted from, the user's config.

The file goes through tomlkit, so its comments and order survive; the new table is checked with
the same rules as a loaded one before anything is written, and the write is atomic. Only the
user's own config: a server in a project config would start only once the project is trusted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crab import ConfigError, InvalidValue, UsageError
from crab.tools import write_atomic

from crab_mcp.settings import check_server


def _pairs(items: Sequence[str], what: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{what} {item!r} is not KEY=VALUE (use ${{VAR}} to take a secret from your environment)")
        pairs[key.strip()] = value
    return pairs


def add_server(
    path: Path,
    name: str,
    command: Sequence[str],
    *,
    url: str | None = None,
    env: Sequence[str] = (),
    headers: Sequence[str] = (),
    force: bool = False,
) -> Path:
    """Write the server table; ``UsageError``/``ConfigError`` (one line) when it cannot be."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise UsageError(f"server name {name!r} may use letters, digits, - and _ only")
    if bool(command) == bool(url):
        raise UsageError("give a command after -- (crab mcp add NAME -- COMMAND ARGS…) or --url URL, not both")
    table: dict[str, Any] = {}
    if command:
        table["command"], table["args"] = command[0], list(command[1:])
    else:
        table["url"] = url
    if env:
        table["env"] = _pairs(env, "--env")
    if headers:
        table["headers"] = _pairs(headers, "--header")
    try:
        check_server(name, table)
    except InvalidValue as exc:
        raise UsageError(str(exc)) from None
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix it before adding a server") from None
    node: Any = doc
    for part in ("plugins", "mcp", "servers"):
        if part not in node:
            node[part] = tomlkit.table(is_super_table=True)
        node = node[part]
        if not hasattr(node, "keys"):
            raise ConfigError(f"{path}: {part} is not a table; fix it before adding a server")
    if name in node and not force:
        raise UsageError(f"an MCP server named {name!r} is already in {path}; pass --force to replace it")
    new = tomlkit.table()
    for key, value in table.items():
        if isinstance(value, dict):
            inline = tomlkit.inline_table()
            inline.update(value)
            new[key] = inline
        else:
            new[key] = value
    node[name] = new
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, tomlkit.dumps(doc).encode("utf-8"))
    return path


def remove_server(path: Path, name: str) -> Path:
    """Delete ``[plugins.mcp.servers.<name>]`` from the user's config, keeping everything else;
    ``UsageError`` (one line, naming the servers there are) when there is no such server."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix it before removing a server") from None
    servers: Any = doc.get("plugins", {}).get("mcp", {}).get("servers", {})
    if not hasattr(servers, "keys") or name not in servers:
        names = ", ".join(sorted(servers)) if hasattr(servers, "keys") and servers else "none"
        raise UsageError(f"no MCP server named {name!r} in {path} (servers there: {names})")
    del servers[name]
    write_atomic(path, tomlkit.dumps(doc).encode("utf-8"))
    return path
