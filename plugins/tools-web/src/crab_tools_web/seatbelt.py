"""The network seatbelt: which URLs and addresses web_fetch may reach, decided before connecting.

Only ``http`` and ``https``; no user-info, IPv6 zone ids, ports outside 1–65535 or odd IPv4
spellings (``http://2130706433/``, ``0x7f.1``, ``0177.0.0.1``). A host name is resolved once here
and *every* address it gives must be public — not loopback, private, link-local, CGNAT,
multicast, unspecified, reserved, IPv6 ULA or link-local, nor a cloud metadata address — unless
``allow_hosts`` (trust-only) names the host, the address or its network. An IPv6 address that
stands for an IPv4 one (IPv4-mapped, NAT64, 6to4, Teredo) is that IPv4 address for every check
(``ipv4_inside``), so no IPv6 entry (``::/0``) unlocks 127.0.0.1 or a metadata address. The
caller connects to the checked address itself (``Target.address``), so a second DNS answer
cannot send the connection elsewhere (DNS rebinding). Every redirect hop goes through
``check_url`` and ``check_target`` again.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crab_tools_web.threads import in_daemon_thread

if TYPE_CHECKING:
    import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOW_HINT = "the user can allow it with [plugins.tools-web] allow_hosts in their own config (trust-only)"

METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
        "metadata.packet.net",
        "metadata.platformequinix.com",
    }
)
"""Names cloud instances use for their metadata service: refused by name, before any lookup."""

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, …
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.169.253",  # AWS DNS
        "169.254.169.123",  # AWS time sync
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
    )
)
"""Metadata services answer with credentials: only an exact address in ``allow_hosts`` unlocks one."""

_EXTRA_BLOCKED: tuple[tuple[IPNetwork, str], ...] = tuple(
    (ipaddress.ip_network(net), why)
    for net, why in (
        ("100.64.0.0/10", "a carrier-grade NAT (CGNAT) address"),
        ("192.0.0.0/24", "an IETF protocol address"),
        ("198.18.0.0/15", "a benchmarking network address"),
        ("fc00::/7", "an IPv6 unique local (ULA) address"),
        ("fe80::/10", "an IPv6 link-local address"),
        ("fec0::/10", "an IPv6 site-local address"),
        ("64:ff9b:1::/48", "a local-use NAT64 address"),
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_FORMS = tuple(ipaddress.IPv6Network(net) for net in ("::ffff:0:0/96", "64:ff9b::/96", "2002::/16", "2001::/32"))
"""IPv6 ranges whose addresses stand for an IPv4 address (mapped, NAT64, 6to4, Teredo)."""
_UNKNOWN_INSIDE = (ipaddress.ip_network("64:ff9b:1::/48"), ipaddress.ip_network("::/96"))
"""Local-use NAT64 (the operator picks the prefix length, so where the IPv4 address sits) and the
deprecated IPv4-compatible ``::a.b.c.d`` (where it leads depends on the host's tunnels): the IPv4
address inside cannot be known, so only an exact address in ``allow_hosts`` unlocks one."""
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$", re.IGNORECASE)
_CANONICAL_IPV4 = re.compile(
    r"^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$"
)
_HOST_NAME = re.compile(r"^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$")


class Refused(Exception):
    """The seatbelt said no; the message is one line for the model saying why and what can be done."""


@dataclass(frozen=True, slots=True)
class AllowList:
    """``allow_hosts`` parsed: exact host names, ``*.suffix`` wildcards, and IP networks."""

    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    networks: tuple[IPNetwork, ...] = ()

    def allows_name(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return host in self.names or any(host.endswith(s) for s in self.suffixes)

    def allows_address(self, address: IPAddress) -> bool:
        """Whether a listed address or network holds ``address`` (an IPv6 form of an IPv4 address
        counts as that IPv4 address); a metadata address needs itself listed."""
        address = ipv4_inside(address) or address
        if needs_exact_entry(address):
            return any(net.num_addresses == 1 and address in net for net in self.networks)
        return any(address.version == net.version and address in net for net in self.networks)


def ipv4_inside(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (IPv4-mapped) or is translated to (NAT64
    ``64:ff9b::/96``, 6to4, Teredo's client), else None: every check judges that address."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _mapped(address: IPAddress) -> bool:
    return isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None


def needs_exact_entry(address: IPAddress) -> bool:
    """Whether only ``allow_hosts`` naming this very address (not a network, not a host name) opens it."""
    address = ipv4_inside(address) or address
    if address in METADATA_ADDRESSES:
        return True
    # :: and ::1 lie in ::/96 but are IPv6's own unspecified and loopback addresses
    return int(address) > 1 and any(address in net for net in _UNKNOWN_INSIDE)


def parse_allow_hosts(entries: Iterable[str]) -> AllowList:
    """Parse ``allow_hosts``; a bad entry raises ``ValueError`` naming it."""
    names: set[str] = set()
    suffixes: list[str] = []
    networks: list[IPNetwork] = []
    for raw in entries:
        entry = raw.strip().lower().rstrip(".")
        bare = entry[1:-1] if entry.startswith("[") and entry.endswith("]") else entry
        try:
            network = ipaddress.ip_network(bare, strict=False)
        except ValueError:
            pass
        else:
            if _only_ipv4_forms(network):
                raise ValueError(
                    f"{raw!r} holds only IPv6 forms of IPv4 addresses (IPv4-mapped, NAT64, 6to4, Teredo), which "
                    "are checked as the IPv4 address inside; name that IPv4 address or network instead"
                )
            networks.append(network)
            continue
        if not _HOST_NAME.match(entry) or _NUMERIC_LABEL.match(entry.rsplit(".", 1)[-1]):
            raise ValueError(f"{raw!r} is not a host name, an IP address or a network such as 10.0.0.0/8")
        if entry.startswith("*."):
            suffixes.append(entry[1:])
        else:
            names.add(entry)
    return AllowList(frozenset(names), tuple(suffixes), tuple(networks))


def _only_ipv4_forms(network: IPNetwork) -> bool:
    """Whether every address of ``network`` is an IPv6 form of an IPv4 address."""
    if not isinstance(network, ipaddress.IPv6Network):
        return False
    return any(network.subnet_of(form) for form in _IPV4_FORMS)


def blocked_reason(address: IPAddress) -> str | None:
    """Why ``address`` is not a public address web_fetch may reach, or None when it is. An IPv6
    form of an IPv4 address is judged as the IPv4 address inside (``ipv4_inside``)."""
    inside = ipv4_inside(address)
    if inside is not None:
        reason = blocked_reason(inside)
        if reason is None:
            return None
        form = "an IPv4-mapped IPv6 address of" if _mapped(address) else "an IPv6 address that embeds"
        return f"{form} {inside}, {reason}"
    if address in METADATA_ADDRESSES:
        return "a cloud metadata service address"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    for net, why in _EXTRA_BLOCKED:
        if address.version == net.version and address in net:
            return why
    if address.is_private:
        return "a private address"
    if address.is_reserved:
        return "a reserved address"
    if not address.is_global:
        return "not a public address"
    return None


def check_url(text: str) -> httpx.URL:
    """``text`` parsed as an absolute http(s) URL with an ordinary host, or ``Refused``."""
    import httpx

    shown = text if len(text) <= 200 else text[:199] + "…"
    if any(c.isspace() or ord(c) < 0x20 or c == "\\" for c in text):
        raise Refused(
            f"Refused: {shown!r} contains spaces, control characters or backslashes; give a plain http(s) URL."
        )
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise Refused(f"Refused: {shown!r} is not a valid URL ({exc}).") from None
    if url.scheme not in ("http", "https"):
        raise Refused(
            f"Refused: {shown!r} is not an http or https URL; web_fetch reads only http:// and https:// pages."
        )
    if url.userinfo:
        raise Refused(f"Refused: {shown!r} carries a user name or password (user@host); give the URL without it.")
    host = url.raw_host.decode("ascii", "replace")
    if not host:
        raise Refused(f"Refused: {shown!r} has no host name.")
    if url.port is not None and not 0 < url.port < 65536:  # httpx parses any number; sockets take 1–65535
        raise Refused(f"Refused: {shown!r} names port {url.port}; a port is a number from 1 to 65535.")
    if "%" in host or "%25" in url.netloc.decode("ascii", "replace"):
        raise Refused(f"Refused: {shown!r} names an IPv6 zone id (%…); web_fetch reaches only public addresses.")
    if ":" not in host:
        last = host.rstrip(".").rsplit(".", 1)[-1]
        if _NUMERIC_LABEL.match(last) and not _CANONICAL_IPV4.match(host):
            raise Refused(
                f"Refused: {shown!r} spells an IPv4 address in an unusual form (decimal, octal, hex or short); "
                "write it as four decimal numbers (a.b.c.d) if it is meant."
            )
    return url


@dataclass(frozen=True, slots=True)
class Target:
    """A checked hop: the URL as asked, and the addresses (all checked) a connection may go to."""

    url: httpx.URL
    host: str
    addresses: tuple[IPAddress, ...]

    @property
    def address(self) -> IPAddress:
        """The first checked address, in the resolver's order."""
        return self.addresses[0]

    def connect_url(self, address: IPAddress) -> httpx.URL:
        """The URL with a checked address in place of the host name (Host and SNI keep the name)."""
        return self.url.copy_with(host=str(address))

    @property
    def host_header(self) -> str:
        return self.url.netloc.decode("ascii")

    @property
    def sni_hostname(self) -> str | None:
        """The name TLS must present and verify, unless the URL named an address itself."""
        if self.url.scheme != "https" or _literal(self.host) is not None:
            return None
        return self.host


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to, in the system resolver's order (tests replace this)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in seen:
            seen.append(address)
    return seen


async def check_target(url: httpx.URL, allow: AllowList) -> Target:
    """Resolve ``url``'s host once and check every address; ``Refused`` names the first bad one."""
    host = url.raw_host.decode("ascii").lower().rstrip(".")
    port = url.port or (443 if url.scheme == "https" else 80)
    name_allowed = allow.allows_name(host)
    literal = _literal(host)
    if literal is not None:
        addresses: list[IPAddress] = [literal]
    else:
        if host in METADATA_HOSTS and not name_allowed:
            raise Refused(f"Refused: {host} is a cloud metadata service; {ALLOW_HINT}.")
        try:
            found = await in_daemon_thread(lambda: resolve(host, port), "resolve")
        except (OSError, UnicodeError) as exc:
            raise Refused(f"web_fetch: cannot resolve {host} ({exc}); check the host name.") from None
        addresses = [a for a in (_literal(f.split("%", 1)[0]) for f in found) if a is not None]
        if not addresses:
            raise Refused(f"web_fetch: {host} has no IP address.")
    for address in addresses:
        reason = blocked_reason(address)
        if reason is None or allow.allows_address(address):
            continue
        if name_allowed and not needs_exact_entry(address):
            continue
        via = " is" if literal is not None else f" resolves to {address}, which is"
        raise Refused(f"Refused: {host}{via} {reason}; web_fetch reaches only public addresses unless {ALLOW_HINT}.")
    # An IPv4-mapped address is its IPv4 address: connect to what was checked, even without IPv6.
    connect = (ipv4_inside(a) or a if _mapped(a) else a for a in addresses)
    return Target(url=url, host=host, addresses=tuple(dict.fromkeys(connect)))
