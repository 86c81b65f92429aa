"""Tab completion of ``@server:uri`` in ``crab chat`` (``crab_completions``): ``@ser`` gives
``@server:``, ``@server:demo://`` the resources (and URI templates' fixed starts) that server
already listed, masked; never a request to a server on a keystroke."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crab_mcp.manager import Manager
    from crab_mcp.server import ServerLink

LIMIT = 50
"""Completions one word gets (crab's own cap too): a server may list thousands of resources."""
ABOUT = 80
"""Characters of a completion's description: one line of a menu."""

Listing = Sequence[tuple[str, str]]
"""A server's ``(uri, description)`` pairs, in the order it listed them."""


def candidates(word: str, listings: Mapping[str, Listing], limit: int = LIMIT) -> list[tuple[str, str]]:
    """``@ti`` → ``[("@tiny:", …)]`` (each server with something to attach whose name starts so);
    ``@tiny:tiny://n`` → ``[("@tiny:tiny://note", "note (text/plain)")]``; at most ``limit``,
    and nothing for a word that is not ``@`` and a server's name or its start."""
    if not word.startswith("@"):
        return []
    name, colon, typed = word[1:].partition(":")
    if not colon:
        servers = sorted(n for n, listing in listings.items() if listing and n.startswith(name))
        return [(f"@{n}:", f"MCP server {n}: {_count(listings[n])}") for n in servers][:limit]
    found: list[tuple[str, str]] = []
    for uri, about in listings.get(name, ()):
        if uri.startswith(typed):
            found.append((f"@{name}:{uri}", about))
            if len(found) >= limit:
                break
    return found


def _count(listing: Listing) -> str:
    return f"{len(listing)} resource{'s' if len(listing) != 1 else ''} to attach"


def template_start(uri_template: str) -> str:
    """What every URI of a template starts with (``demo://r/{id}`` → ``demo://r/``), or "" when
    that is not even a scheme (nothing worth completing)."""
    start = uri_template.split("{", 1)[0]
    scheme, colon, _ = start.partition(":")
    return start if colon and scheme and scheme[0].isalpha() else ""


def listings(manager: Manager, word: str) -> dict[str, Listing]:
    """What the servers ``word`` may complete from listed (the one it names after ``@``, or every
    one before the ``:``), masked with each one's ``${VAR}`` values: only the servers of this run
    (``manager.links``: the user's config's and a trusted project's; an untrusted project's never
    start), the ones ``crab_mcp.attach`` reads from."""
    name, colon, _ = word.removeprefix("@").partition(":")
    links = [manager.links[name]] if colon and name in manager.links else [] if colon else manager.links.values()
    return {link.name: _masked(link, list(_listed(link))) for link in links}


def _listed(link: ServerLink) -> Iterator[tuple[str, str]]:
    seen: set[str] = set()
    for resource in link.resources:
        uri = str(resource.uri)
        if uri not in seen:
            seen.add(uri)
            mime = f" ({resource.mime_type})" if resource.mime_type else ""
            yield uri, f"{resource.name}{mime}"
    for template in link.templates:
        start = template_start(template.uri_template)
        if start and start not in seen:
            seen.add(start)
            yield start, f"template {template.uri_template}"


def _masked(link: ServerLink, listing: list[tuple[str, str]]) -> Listing:
    from crab.secrets import Redactor

    from crab_mcp.settings import secret_values

    secrets = secret_values(link.config, link.environ)
    if not secrets:
        return [(uri, _line(about)) for uri, about in listing]
    mask = Redactor(secrets).text
    return [(mask(uri), _line(mask(about))) for uri, about in listing]


def _line(text: str) -> str:
    first = text.strip().split("\n", 1)[0]
    return first if len(first) <= ABOUT else f"{first[: ABOUT - 1]}…"
