"""The MCP servers an editor passes in ``session/new``, as settings of crab-mcp's table.

They come from the user's own editor configuration, so they are the user's word, like a server
in ``~/.crab/config.toml``: each becomes ``plugins.mcp.servers.<name>`` among the settings the
session's ``crab.Agent`` is made with (the program's layer, applied last), and crab-mcp starts
it with its usual rules (timeouts, permission classes, masked logs). crab-acp never imports
crab-mcp; without it installed and enabled the servers do not start and the editor is told.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Sequence
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer

PLUGIN = "mcp"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def available() -> bool:
    """Whether crab-mcp is installed (what ``mcpCapabilities`` may promise)."""
    return importlib.util.find_spec("crab_mcp") is not None


def server_settings(servers: Sequence[Any] | None) -> tuple[dict[str, Any], list[str]]:
    """``{"plugins.mcp.servers.NAME": table}`` for ``servers``, and a line for each one left out."""
    settings: dict[str, Any] = {}
    skipped: list[str] = []
    for server in servers or ():
        name = _UNSAFE.sub("_", getattr(server, "name", "") or "server").strip("_") or "server"
        while f"plugins.{PLUGIN}.servers.{name}" in settings:
            name += "_"
        if isinstance(server, McpServerStdio):
            table: dict[str, Any] = {"command": server.command, "args": list(server.args)}
            if server.env:
                table["env"] = {item.name: item.value for item in server.env}
        elif isinstance(server, HttpMcpServer | SseMcpServer):
            table = {"url": server.url}
            if server.headers:
                table["headers"] = {item.name: item.value for item in server.headers}
            if isinstance(server, SseMcpServer):
                table["transport"] = "sse"
        else:
            skipped.append(f"MCP server {server.name!r}: crab cannot start servers of this transport")
            continue
        settings[f"plugins.{PLUGIN}.servers.{name}"] = table
    return settings, skipped
