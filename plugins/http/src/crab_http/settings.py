"""``[plugins.http]``: the declared keys, and the typed view the channel reads.

Everything that opens the listener (``host``, ``port``, TLS, the proxy flag), lets a browser page
of another origin in (``cors_origins``) or another name (``allowed_hosts``), loosens a limit on clients (``rate_limit``,
``max_request_bytes``, ``turn_timeout``) is trust-only: a project's ``.crab/config.toml`` cannot
set it unless the user trusts the project; ``permission_prompts``, ``on_disconnect`` and ``web``
it may only narrow.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import crab

NAME = "http"

TABLE = crab.ConfigTable(
    NAME,
    (
        crab.Setting(
            "host",
            "str",
            "127.0.0.1",
            "address to listen on (anything but loopback needs TLS or behind_proxy)",
            trust_only=True,
        ),
        crab.Setting(
            "port",
            "int",
            8765,
            "TCP port to listen on (0: any free port, shown at start)",
            minimum=0,
            maximum=65535,
            trust_only=True,
        ),
        crab.Setting("tls_cert", "str", None, "PEM certificate file: serve HTTPS", trust_only=True),
        crab.Setting("tls_key", "str", None, "PEM private key file of tls_cert", trust_only=True),
        crab.Setting(
            "behind_proxy",
            "bool",
            False,
            "a reverse proxy in front terminates TLS (lets a non-loopback host listen without tls_cert)",
            trust_only=True,
        ),
        crab.Setting(
            "cors_origins", "list[str]", [], "browser origins allowed to call the API (empty: none)", trust_only=True
        ),
        crab.Setting(
            "allowed_hosts",
            "list[str]",
            [],
            "Host header names served besides the listening address's own (a proxy's public name; \"*\": any)",
            trust_only=True,
        ),
        crab.Setting(
            "rate_limit",
            "int",
            120,
            "requests per minute one token may make (a burst of as many)",
            minimum=1,
            trust_only=True,
        ),
        crab.Setting(
            "max_request_bytes",
            "int",
            1_048_576,
            "largest request body accepted (413 past it)",
            minimum=1024,
            trust_only=True,
        ),
        crab.Setting(
            "on_disconnect",
            "str",
            "abort",
            "a client that leaves mid-turn: abort the turn, or let it finish (the answer stays in the session)",
            choices=("abort", "finish"),
            trust_order=("abort", "finish"),
        ),
        crab.Setting(
            "turn_timeout",
            "float",
            600.0,
            "seconds a turn started over HTTP may run before it is aborted",
            above=0,
            trust_only=True,
        ),
        crab.Setting(
            "permission_prompts",
            "str",
            "ask",
            "write and exec tool calls: ask the client that sent the message, or refuse them",
            choices=("refuse", "ask"),
            trust_order=("refuse", "ask"),
        ),
        crab.Setting(
            "ask_timeout", "float", 300.0, "seconds a permission question waits for the client's answer", above=0
        ),
        crab.Setting("web", "bool", True, "serve the web chat page at /", trust_order=(False, True)),
    ),
    doc="the HTTP API and web chat (`crab serve http`)",
)


@dataclass(frozen=True)
class HttpSettings:
    """The validated ``[plugins.http]`` values the channel uses."""

    host: str = "127.0.0.1"
    port: int = 8765
    tls_cert: str | None = None
    tls_key: str | None = None
    behind_proxy: bool = False
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    rate_limit: int = 120
    max_request_bytes: int = 1_048_576
    on_disconnect: str = "abort"
    turn_timeout: float = 600.0
    permission_prompts: str = "ask"
    ask_timeout: float = 300.0
    web: bool = True

    @classmethod
    def from_table(cls, raw: Mapping[str, Any] | None) -> HttpSettings:
        values = crab.config.validate_table(TABLE, raw)
        return cls(
            host=str(values["host"]).strip(),
            port=values["port"],
            tls_cert=values.get("tls_cert") or None,
            tls_key=values.get("tls_key") or None,
            behind_proxy=values["behind_proxy"],
            cors_origins=tuple(str(o).strip().rstrip("/") for o in values["cors_origins"]),
            allowed_hosts=tuple(str(h).strip().lower().rstrip(".") for h in values["allowed_hosts"]),
            rate_limit=values["rate_limit"],
            max_request_bytes=values["max_request_bytes"],
            on_disconnect=values["on_disconnect"],
            turn_timeout=values["turn_timeout"],
            permission_prompts=values["permission_prompts"],
            ask_timeout=values["ask_timeout"],
            web=values["web"],
        )

    @property
    def loopback(self) -> bool:
        """Whether ``host`` is reachable from this machine only."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host.strip("[]")).is_loopback
        except ValueError:
            return False

    def problem(self) -> str | None:
        """Why these settings cannot serve (one line), or None."""
        if bool(self.tls_cert) != bool(self.tls_key):
            return "http: tls_cert and tls_key go together: set both in [plugins.http] (or neither)"
        for key, value in (("tls_cert", self.tls_cert), ("tls_key", self.tls_key)):
            if value and not os.access(value, os.R_OK):
                return f"http: {key} {value!r} is not a readable file: fix the path in [plugins.http]"
        if not self.loopback and not self.tls_cert and not self.behind_proxy:
            return (
                f"http: host {self.host!r} is reachable from other machines: set tls_cert and tls_key, or "
                "behind_proxy = true when a reverse proxy terminates TLS (both in [plugins.http] of your user config)"
            )
        if self.host.strip("[]") in ("0.0.0.0", "::") and not self.tls_cert and not self.allowed_hosts:
            return (
                f"http: host {self.host!r} behind a proxy answers only the names in allowed_hosts: set allowed_hosts "
                'to the name(s) the proxy serves (or ["*"]) in [plugins.http] of your user config'
            )
        return None
