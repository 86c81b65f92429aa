"""``[plugins.lsp]``: the language servers (trust-only: each starts a command) and the bounds.

``servers.NAME`` has ``command``, ``args`` and ``patterns`` (globs on the path relative to the
workspace, or on the file name: ``["*.py"]``), and optionally ``language`` (the LSP language id;
by default from the file's extension). ``check_servers`` rejects a malformed table before
anything runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crab import ConfigTable, InvalidValue, Setting

SERVER_KEYS = {
    "command": "the server's program (on PATH, or a path)",
    "args": "a list of strings (the program's arguments)",
    "patterns": 'a non-empty list of globs such as ["*.py"]',
    "language": "an LSP language id such as python",
    "settle": "seconds >= 0 and <= 10",
}


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One configured language server."""

    name: str
    command: str
    args: tuple[str, ...]
    patterns: tuple[str, ...]
    language: str | None = None
    settle: float = 0.0
    """Seconds to keep listening after diagnostics came, for a server that sends them in parts
    (typescript-language-server: syntax first, types a moment later); each part restarts it."""


def _key(*parts: str) -> tuple[str, ...]:
    return ("plugins", "lsp", *parts)


def _strings(value: Any, empty: bool) -> bool:
    return isinstance(value, list) and (empty or bool(value)) and all(isinstance(v, str) and v for v in value)


def check_servers(values: Mapping[str, Any]) -> None:
    """``servers`` as described above, or ``InvalidValue`` naming the first key that is not."""
    for name, table in (values.get("servers") or {}).items():
        if not isinstance(table, Mapping):
            raise InvalidValue(_key("servers", name), "a table with command = … and patterns = […]", table)
        for key, value in table.items():
            if key not in SERVER_KEYS:
                raise InvalidValue(_key("servers", name, key), "one of " + ", ".join(SERVER_KEYS), key)
            ok = {
                "command": isinstance(value, str) and bool(value.strip()),
                "args": _strings(value, empty=True),
                "patterns": _strings(value, empty=False),
                "language": isinstance(value, str) and bool(value.strip()),
                "settle": isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 10,
            }[key]
            if not ok:
                raise InvalidValue(_key("servers", name, key), SERVER_KEYS[key], value)
        for needed in ("command", "patterns"):
            if needed not in table:
                raise InvalidValue(_key("servers", name, needed), SERVER_KEYS[needed], None)


def server_specs(settings: Mapping[str, Any]) -> list[ServerSpec]:
    """The configured servers, checked already by ``check_servers``, in configuration order."""
    return [
        ServerSpec(
            name,
            table["command"],
            tuple(table.get("args", ())),
            tuple(table["patterns"]),
            table.get("language"),
            float(table.get("settle", 0.0)),
        )
        for name, table in (settings.get("servers") or {}).items()
    ]


def doctor_lines(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``crab doctor``'s lines: each server's command found (where), or not (a ``fail``)."""
    lines: list[tuple[str, str]] = []
    for spec in server_specs(settings):
        found = shutil.which(spec.command)
        if found is not None:
            lines.append(("ok", f"language server {spec.name}: {found} (for {', '.join(spec.patterns)})"))
        else:
            lines.append(
                (
                    "fail",
                    f"language server {spec.name}: {spec.command!r} is not on PATH; install it or fix "
                    f"[plugins.lsp.servers.{spec.name}] command",
                )
            )
    return lines


TABLE = ConfigTable(
    "lsp",
    (
        Setting(
            "servers",
            "table",
            doc="language servers by name: command, args, patterns (file globs), language, settle",
            trust_only=True,
        ),
        Setting(
            "diagnostics_wait",
            "float",
            5.0,
            "seconds an edit waits for its file's new diagnostics (a server's first start included)",
            above=0,
            maximum=120,
        ),
        Setting(
            "request_timeout",
            "float",
            15.0,
            "seconds a server may take to start or to answer one request before it is ended",
            above=0,
            maximum=600,
        ),
        Setting("max_diagnostics", "int", 20, "diagnostics shown for one file (errors first)", minimum=1, maximum=500),
    ),
    doc="language servers: an edit's new diagnostics join its result; definition, references, hover, symbols",
    check=check_servers,
)
