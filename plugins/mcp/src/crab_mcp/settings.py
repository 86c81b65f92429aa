"""The ``[plugins.mcp]`` table: its declaration, the check of each ``servers.<name>`` table, and
the typed ``ServerConfig`` read from it.

``servers`` is trust-only as a whole: a server starts a command (or reaches a URL with headers
that may carry keys), so one declared in an untrusted project's config never starts; core drops
the table and ``crab mcp list`` says so. Values in ``env`` and ``headers`` may reference the
user's environment as ``${VAR}``; they are resolved only when the server starts
(``resolve_refs``) and never shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crab import ConfigTable, InvalidValue, Setting

PLUGIN = "mcp"
PERMISSIONS = ("read", "write", "exec", "network")
DEFAULT_TIMEOUT = 60.0
DEFAULT_CONNECT_TIMEOUT = 20.0
DEFAULT_STARTUP_WAIT = 5.0
DEFAULT_MAX_MESSAGE = 32_000_000
"""The transport's cap on one message, far above what the model reads of a result (50 KB):
a result between the two arrives, cut to the model's limit with a note (``crab_mcp.results``)."""

SERVER_KEYS: dict[str, str] = {
    "command": "a string (the program to start)",
    "args": "a list of strings",
    "env": "a table of strings",
    "cwd": "a string (a folder)",
    "url": "a string starting with http:// or https://",
    "headers": "a table of strings",
    "transport": "streamable-http (the default) or sse (the legacy HTTP+SSE transport of older servers)",
    "enabled": "true or false",
    "include": "a list of strings",
    "exclude": "a list of strings",
    "timeout": "a number > 0",
    "connect_timeout": "a number > 0",
    "prefix": "a string",
    "permission": "one of read, write, exec, network",
    "permissions": "a table of tool name = read, write, exec or network",
    "roots": "false (crab declares no roots to this server) or a list of folders (its roots besides the workspace)",
}


def _key(*parts: str) -> tuple[str, ...]:
    return ("plugins", PLUGIN, *parts)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _string_table(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value - value == 0 and value > 0


_CHECKS: dict[str, Callable[[Any], bool]] = {
    "command": lambda v: isinstance(v, str) and bool(v.strip()),
    "args": _strings,
    "env": _string_table,
    "cwd": lambda v: isinstance(v, str) and bool(v),
    "url": lambda v: isinstance(v, str) and v.startswith(("http://", "https://")),
    "headers": _string_table,
    "transport": lambda v: v in ("streamable-http", "sse"),
    "enabled": lambda v: isinstance(v, bool),
    "include": _strings,
    "exclude": _strings,
    "timeout": _positive,
    "connect_timeout": _positive,
    "prefix": lambda v: isinstance(v, str),
    "permission": lambda v: v in PERMISSIONS,
    "permissions": lambda v: isinstance(v, Mapping) and all(p in PERMISSIONS for p in v.values()),
    "roots": lambda v: v is False or _strings(v),
}


def check_server(name: str, table: Any) -> None:
    """Raise ``InvalidValue`` (one line: key, expected, found) for the first bad key of one server."""
    if not isinstance(table, Mapping):
        raise InvalidValue(_key("servers", name), "a table with command = … or url = …", table)
    for key, value in table.items():
        check = _CHECKS.get(key)
        if check is None:
            raise InvalidValue(_key("servers", name, key), "one of " + ", ".join(SERVER_KEYS), key)
        if not check(value):
            raise InvalidValue(_key("servers", name, key), SERVER_KEYS[key], value)
    has_command, has_url = "command" in table, "url" in table
    if "transport" in table and not has_url:
        raise InvalidValue(_key("servers", name, "transport"), "only with url = … (an HTTP server)", table["transport"])
    if has_command == has_url:
        raise InvalidValue(
            _key("servers", name), "exactly one of command = … (stdio) or url = … (streamable HTTP)", table
        )


def _check(values: Mapping[str, Any]) -> None:
    servers = values.get("servers") or {}
    for name, table in servers.items():
        check_server(name, table)
    bad = [p for p in values.get("serve_permissions") or [] if p not in PERMISSIONS]
    if bad:
        raise InvalidValue(_key("serve_permissions"), "a list of read, write, exec, network", bad)


SAMPLING_MODES = ("off", "ask", "remote")
"""``[plugins.mcp] sampling``, narrowest first (an untrusted project may only narrow it)."""
DEFAULT_SAMPLING_MAX_TOKENS = 1024

TABLE = ConfigTable(
    name=PLUGIN,
    doc="MCP servers whose tools crab uses, and what `crab mcp serve` offers",
    settings=(
        Setting(
            "servers",
            "table",
            {},
            "MCP servers by name: command/args/env/cwd (stdio) or url/headers/transport (HTTP), enabled, include, "
            "exclude, timeout, connect_timeout, prefix, permission, permissions, roots (see the plugin README)",
            trust_only=True,
        ),
        Setting(
            "timeout", "float", DEFAULT_TIMEOUT, "seconds one MCP tool call may take (per server: timeout)", above=0
        ),
        Setting(
            "connect_timeout",
            "float",
            DEFAULT_CONNECT_TIMEOUT,
            "seconds a server may take to start and list its tools before it is reported failed",
            above=0,
        ),
        Setting(
            "startup_wait",
            "float",
            DEFAULT_STARTUP_WAIT,
            "seconds a run waits at start-up for its servers; one still connecting then goes on in the "
            "background (up to its connect_timeout) and its tools join when it is ready",
            minimum=0,
        ),
        Setting(
            "max_message",
            "int",
            DEFAULT_MAX_MESSAGE,
            "bytes one message from a server may have; a larger one ends that connection (crab starts "
            "the server again on the next call); a result under it reaches the model cut to 50 KB",
            above=0,
        ),
        Setting(
            "roots",
            "list[str]",
            [],
            "folders announced to every server as roots besides the workspace and the folders its own "
            "arguments name (MCP roots; a server's roots = [...] or false replaces this)",
            trust_only=True,
        ),
        Setting(
            "sampling",
            "str",
            "ask",
            "a server's sampling request (it asks crab's model) while one of its tools runs: ask = the "
            "permission question on this machine only, remote = on remote channels too, off = refused",
            choices=SAMPLING_MODES,
            trust_order=SAMPLING_MODES,
        ),
        Setting(
            "sampling_max_tokens",
            "int",
            DEFAULT_SAMPLING_MAX_TOKENS,
            "tokens one sampling answer may have (the smaller of this and the server's max_tokens)",
            above=0,
            trust_only=True,
        ),
        Setting(
            "serve_permissions",
            "list[str]",
            ["read"],
            "permission classes `crab mcp serve` lets its client use (add write, exec, network to allow them)",
            trust_only=True,
        ),
    ),
    check=_check,
)


@dataclass(frozen=True)
class ServerConfig:
    """One configured server, defaults filled from the plugin table."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    http_transport: str = "streamable-http"
    enabled: bool = True
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    prefix: str | None = None
    permission: str = "network"
    permissions: Mapping[str, str] = field(default_factory=dict)
    max_message: int = DEFAULT_MAX_MESSAGE
    roots: tuple[str, ...] | None = None
    """This server's roots besides the workspace (None: the default, see ``server_roots``)."""
    declare_roots: bool = True
    """False (``roots = false``): crab does not declare the roots capability to this server."""

    @property
    def transport(self) -> str:
        """``stdio``, ``http`` (streamable HTTP) or ``sse`` (the legacy HTTP+SSE transport)."""
        if self.command is not None:
            return "stdio"
        return "sse" if self.http_transport == "sse" else "http"

    @property
    def tool_prefix(self) -> str:
        return f"{self.name}_" if self.prefix is None else self.prefix

    def wants(self, tool: str) -> bool:
        """Whether ``tool`` passes ``include`` (when given) and is not in ``exclude``."""
        return (not self.include or tool in self.include) and tool not in self.exclude

    def permission_of(self, tool: str) -> str:
        return self.permissions.get(tool, self.permission)

    def target(self) -> str:
        """What the server is, for listings (never with env or header values)."""
        if self.url is not None:
            return self.url
        return " ".join([self.command or "", *self.args])


def server_configs(settings: Mapping[str, Any]) -> list[ServerConfig]:
    """Every server of the checked ``[plugins.mcp]`` table, in file order."""
    timeout = float(settings.get("timeout", DEFAULT_TIMEOUT))
    connect = float(settings.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT))
    max_message = int(settings.get("max_message", DEFAULT_MAX_MESSAGE))
    servers: list[ServerConfig] = []
    for name, raw in (settings.get("servers") or {}).items():
        servers.append(
            ServerConfig(
                name=name,
                command=raw.get("command"),
                args=tuple(raw.get("args", ())),
                env=dict(raw.get("env", {})),
                cwd=raw.get("cwd"),
                url=raw.get("url"),
                headers=dict(raw.get("headers", {})),
                http_transport=str(raw.get("transport", "streamable-http")),
                enabled=bool(raw.get("enabled", True)),
                include=tuple(raw.get("include", ())),
                exclude=tuple(raw.get("exclude", ())),
                timeout=float(raw.get("timeout", timeout)),
                connect_timeout=float(raw.get("connect_timeout", connect)),
                prefix=raw.get("prefix"),
                permission=str(raw.get("permission", "network")),
                permissions=dict(raw.get("permissions", {})),
                max_message=max_message,
                roots=tuple(raw["roots"]) if isinstance(raw.get("roots"), list) else None,
                declare_roots=raw.get("roots") is not False,
            )
        )
    return servers


def arg_folders(config: ServerConfig) -> list[Path]:
    """The folders a stdio server's own arguments name: an argument (or the value of
    ``--flag=VALUE``) that is an absolute path, ``~…`` or ``.``/``..``-relative (to the server's
    ``cwd``, else crab's) and is an existing folder. ``server-filesystem /data`` names ``/data``."""
    base = Path(config.cwd).expanduser() if config.cwd else Path.cwd()
    found: list[Path] = []
    for arg in config.args if config.command is not None else ():
        for value in (arg, arg.partition("=")[2]):
            if not value.startswith(("/", "~", ".")):
                continue
            path = base / Path(value).expanduser()
            if path.is_dir():
                found.append(path.resolve())
    return found


def server_roots(config: ServerConfig, shared: Sequence[Path]) -> list[Path]:
    """The folders crab announces to ``config``'s server as roots besides the workspace: its own
    ``roots`` when given; else ``shared`` (``[plugins.mcp] roots``) and the folders its
    arguments name, so declaring roots never takes away what the server's command line granted
    (the reference filesystem server replaces its folders with the client's roots)."""
    if config.roots is not None:
        return [Path(p).expanduser() for p in config.roots]
    return list(dict.fromkeys([*shared, *arg_folders(config)]))


_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def references(values: Mapping[str, str]) -> list[str]:
    """The names of the variables ``${VAR}`` in ``values`` refers to, sorted, each once."""
    return sorted({m.group(1) for value in values.values() for m in _REF.finditer(value)})


class MissingVariable(ValueError):
    """An ``${VAR}`` reference names a variable the user's environment does not have."""


def resolve_refs(values: Mapping[str, str], environ: Mapping[str, str], what: str) -> dict[str, str]:
    """``values`` with every ``${VAR}`` replaced from ``environ``; a missing one raises
    ``MissingVariable`` naming the key and the variable (never a value)."""
    resolved: dict[str, str] = {}
    for key, value in values.items():

        def sub(match: re.Match[str], key: str = key) -> str:
            var = match.group(1)
            if var not in environ:
                raise MissingVariable(f"{what} {key} references ${{{var}}}, which is not set in your environment")
            return environ[var]

        resolved[key] = _REF.sub(sub, value)
    return resolved


SAFE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ")
"""What a stdio server inherits of crab's environment besides its configured ``env``."""


def child_env(config: ServerConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The whole environment of a stdio server: the safe default set, then its resolved ``env``."""
    env = {k: environ[k] for k in SAFE_ENV if k in environ}
    env.update(resolve_refs(config.env, environ, "env"))
    return env


def secret_values(config: ServerConfig, environ: Mapping[str, str]) -> list[str]:
    """The values a server's ``${VAR}`` references resolve to (to mask them wherever text is shown)."""
    found: list[str] = []
    for table in (config.env, config.headers):
        for value in table.values():
            for match in _REF.finditer(value):
                secret = environ.get(match.group(1))
                if secret and len(secret) >= 4:
                    found.append(secret)
    return found
