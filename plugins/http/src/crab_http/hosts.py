"""Which ``Host`` header values the server answers: a guard against DNS rebinding.

A page on ``evil.example`` whose name is made to resolve to 127.0.0.1 talks to a loopback
server as its own origin; the one thing that gives it away is the ``Host`` header it sends.
So a request is served only when its ``Host`` names the listening address (on loopback:
``localhost``, ``127.x.x.x``, ``::1``) or one of ``allowed_hosts`` (``"*"``: any). A TLS
listener with no ``allowed_hosts`` answers any name: its certificate already binds the name a
browser may reach it by. A request without ``Host`` (HTTP/1.0) was not sent by a browser page.
"""

from __future__ import annotations

import ipaddress

from crab_http.settings import HttpSettings

WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::"})


def host_name(header: str) -> str:
    """The name of a ``Host`` header value: lower case, without port, brackets or a final dot."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def _loopback(name: str) -> bool:
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostCheck:
    """``allowed(header)``: whether a request with this ``Host`` value is served."""

    def __init__(self, settings: HttpSettings) -> None:
        own = settings.host.strip("[]").lower()
        self.loopback = settings.loopback
        self.names = frozenset({*settings.allowed_hosts, *(() if own in WILDCARD_ADDRESSES else (own,))})
        self.any = "*" in self.names or (bool(settings.tls_cert) and not settings.allowed_hosts)

    def allowed(self, header: str | None) -> bool:
        if header is None or self.any:
            return True
        name = host_name(header)
        return name in self.names or (self.loopback and _loopback(name))
