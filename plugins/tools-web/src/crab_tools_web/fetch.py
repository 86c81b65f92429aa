"""One bounded GET through the seatbelt: redirects followed by hand, each hop checked and pinned.

``fetch`` resolves and checks every hop (``crab_tools_web.seatbelt``), connects to the checked
address with the Host header and TLS name (SNI and certificate check) of the URL's host, stops
at ``max_bytes`` of body, and is bounded by connect, read and total timeouts. Environment proxy
variables are ignored: a proxy would resolve the name itself and undo the check. A binary
type is refused from its headers, before its body is read. The body is decompressed here, never
by httpx, so ``max_bytes`` bounds what is inflated, not only what is kept: a few KB of gzip (or
of ``gzip, gzip``) cannot expand into gigabytes in memory. ``max_bytes`` bounds the bytes
received too (endless empty deflate blocks inflate to nothing), and the download stops where
the compressed stream ends. httpx is imported inside ``fetch``.
"""

from __future__ import annotations

import asyncio
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crab_tools_web.seatbelt import AllowList, Target, check_target, check_url

if TYPE_CHECKING:
    import ssl

    import httpx

REDIRECTS = (301, 302, 303, 307, 308)
MAX_ADDRESSES = 3
"""Checked addresses of one host tried in turn when a connection is refused."""
USER_AGENT = "crab-tools-web/0.1 (an AI agent's web_fetch tool)"
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,text/*;q=0.8,application/json;q=0.8,*/*;q=0.1"

_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/x-toml",
        "application/x-sh",
        "application/x-ndjson",
        "application/sql",
        "application/graphql",
        "application/x-www-form-urlencoded",
    }
)
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_SNIFF_TYPES = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/unknown"})


class FetchError(Exception):
    """The fetch failed for a reason that is not the seatbelt's: one line for the model."""


@dataclass(frozen=True, slots=True)
class Fetched:
    """A downloaded body and what its headers said. ``complete`` is False when ``max_bytes`` cut it."""

    url: str
    status: int
    media_type: str
    charset: str | None
    body: bytes
    complete: bool
    redirects: tuple[str, ...] = ()

    @property
    def is_html(self) -> bool:
        return self.media_type in _HTML_TYPES or (self.media_type in _SNIFF_TYPES and looks_like_html(self.body))


def split_content_type(value: str | None) -> tuple[str, str | None]:
    """``text/html; charset=UTF-8`` → (``text/html``, ``UTF-8``)."""
    if not value:
        return "", None
    media, *params = value.split(";")
    charset = None
    for param in params:
        key, _, val = param.partition("=")
        if key.strip().lower() == "charset" and val.strip():
            charset = val.strip().strip("\"'")
    return media.strip().lower(), charset


def is_text_type(media_type: str) -> bool:
    """Whether a declared media type is text web_fetch can return (HTML included)."""
    return (
        media_type.startswith("text/")
        or media_type in _HTML_TYPES
        or media_type in _TEXT_TYPES
        or media_type.endswith(("+json", "+xml", "+yaml"))
    )


def looks_like_html(body: bytes) -> bool:
    head = body[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<html" in head[:256]


def looks_binary(body: bytes) -> bool:
    """A NUL byte in the first 8 KB, as git and grep decide (UTF-16 text counts as binary too)."""
    return b"\x00" in body[:8192]


def _binary_message(url: str, media_type: str) -> str:
    kind = media_type or "an unlabelled binary file"
    return (
        f"web_fetch: {url} is {kind}, not text; web_fetch reads only HTML and text "
        "(plain text, JSON, XML, …). Look for an HTML or text version of it."
    )


async def fetch(
    url: str,
    *,
    allow: AllowList,
    max_bytes: int,
    max_redirects: int,
    connect_timeout: float,
    read_timeout: float,
    total_timeout: float,
    verify: ssl.SSLContext | bool = True,
) -> Fetched:
    """GET ``url`` within the limits; raises ``Refused`` (seatbelt) or ``FetchError`` (one line).

    ``verify`` is for tests that trust their own certificate authority; crab passes nothing.
    """
    try:
        async with asyncio.timeout(total_timeout):
            return await _fetch(url, allow, max_bytes, max_redirects, connect_timeout, read_timeout, verify)
    except TimeoutError:
        raise FetchError(
            f"web_fetch: {url} did not finish within {total_timeout:g} s (total_timeout); "
            "the server is slow or the page is very large."
        ) from None


async def _fetch(
    url: str,
    allow: AllowList,
    max_bytes: int,
    max_redirects: int,
    connect_timeout: float,
    read_timeout: float,
    verify: ssl.SSLContext | bool,
) -> Fetched:
    import httpx

    timeout = httpx.Timeout(connect=connect_timeout, read=read_timeout, write=read_timeout, pool=connect_timeout)
    current = check_url(url)
    hops: list[str] = []
    while True:
        target = await check_target(current, allow)
        # A client per hop: a pooled connection (keyed by address) must never carry a request for
        # another host name, nor a cookie go from one host to another. trust_env=False: a proxy
        # from HTTP(S)_PROXY would resolve the host itself, bypassing the checked address.
        async with httpx.AsyncClient(timeout=timeout, trust_env=False, follow_redirects=False, verify=verify) as client:
            extensions = {"sni_hostname": target.sni_hostname} if target.sni_hostname else {}
            headers = {
                "Host": target.host_header,
                "User-Agent": USER_AGENT,
                "Accept": ACCEPT,
                # Only codecs httpx decodes incrementally in small pieces; never brotli/zstd bombs.
                "Accept-Encoding": "gzip, deflate",
            }
            shown = str(current)
            try:
                response = await _open(client, target, headers, extensions)
            except httpx.TimeoutException as exc:
                raise FetchError(f"web_fetch: {shown} timed out ({_timeout_kind(exc)}).") from None
            except httpx.HTTPError as exc:
                raise FetchError(f"web_fetch: cannot fetch {shown}: {_reason(exc)}.") from None
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECTS and location:
                    if len(hops) >= max_redirects:
                        raise FetchError(
                            f"web_fetch: {url} redirects more than {max_redirects} times (max_redirects); "
                            f"the last hop was {shown}."
                        )
                    hops.append(shown)
                    try:
                        nxt = current.join(location)
                    except (httpx.InvalidURL, ValueError) as exc:
                        raise FetchError(f"web_fetch: {shown} redirects to an invalid URL ({exc}).") from None
                    current = check_url(str(nxt))
                    continue
                if response.status_code >= 400:
                    phrase = response.reason_phrase or ""
                    raise FetchError(f"web_fetch: {shown} answered HTTP {response.status_code} {phrase}".rstrip() + ".")
                media_type, charset = split_content_type(response.headers.get("content-type"))
                if not is_text_type(media_type) and media_type not in _SNIFF_TYPES:
                    raise FetchError(_binary_message(shown, media_type))
                body, complete = await _read_capped(response, max_bytes, shown)
            finally:
                await response.aclose()
            if looks_binary(body):
                raise FetchError(_binary_message(shown, media_type))
            return Fetched(shown, response.status_code, media_type, charset, body, complete, tuple(hops))


async def _open(
    client: httpx.AsyncClient, target: Target, headers: dict[str, str], extensions: dict[str, str]
) -> httpx.Response:
    """Send the GET to the first checked address that accepts a connection (at most three tried).

    A refused or unreachable address (an IPv6 address without IPv6 routing, say) moves on to the
    next one the resolver gave; a timeout does not, so the connect timeout is not multiplied.
    """
    import httpx

    addresses = target.addresses[:MAX_ADDRESSES]
    for number, address in enumerate(addresses, 1):
        request = client.build_request("GET", target.connect_url(address), headers=headers, extensions=extensions)
        try:
            return await client.send(request, stream=True)
        except httpx.ConnectError:
            if number == len(addresses):
                raise
    raise AssertionError("a checked target has at least one address")


class Inflater:
    """Decodes one ``Content-Encoding`` (gzip or deflate, as requested) at most ``limit`` bytes at
    a time, so a compression bomb never expands past what the caller keeps. Any other coding, or
    two stacked (``gzip, gzip``), raises ``FetchError``: web_fetch asked for neither."""

    def __init__(self, header: str | None, shown: str) -> None:
        codings = [c.strip().lower() for c in (header or "").split(",")]
        codings = [c for c in codings if c and c != "identity"]
        self.coding = codings[0] if len(codings) == 1 else ""
        if codings and self.coding not in ("gzip", "x-gzip", "deflate"):
            raise FetchError(
                f"web_fetch: {shown} was sent with Content-Encoding {', '.join(codings)}, which web_fetch "
                "did not ask for and does not decode (only one layer of gzip or deflate)."
            )
        self.shown = shown
        self._zlib: zlib._Decompress | None = None
        if self.coding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif self.coding == "deflate":
            self._zlib = zlib.decompressobj()
        self._first = True

    def feed(self, data: bytes, limit: int) -> bytes:
        """At most ``limit`` decoded bytes of ``data`` (the rest of ``data`` is dropped: the
        caller stops reading once it has ``limit``)."""
        if self._zlib is None:
            return data[:limit]
        try:
            out = self._zlib.decompress(data, limit)
        except zlib.error:
            if not (self.coding == "deflate" and self._first):
                raise FetchError(f"web_fetch: {self.shown} sent a body that does not decompress.") from None
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as some servers send it
            self._first = False
            return self.feed(data, limit)
        self._first = False
        return out

    @property
    def finished(self) -> bool:
        """Whether the compressed stream has ended: bytes after it are not the page (zlib would
        keep copying them into ``unused_data``), so the caller stops reading."""
        return self._zlib is not None and self._zlib.eof


async def _read_capped(response: httpx.Response, max_bytes: int, shown: str) -> tuple[bytes, bool]:
    """The decoded body up to ``max_bytes``; the download stops there, after ``max_bytes`` bytes
    received, or at the end of the compressed stream (the rest is never read)."""
    import httpx

    inflater = Inflater(response.headers.get("content-encoding"), shown)
    chunks: list[bytes] = []
    size = 0
    received = 0
    try:
        async for raw in response.aiter_raw():
            room = max_bytes - size
            over = received + len(raw) > max_bytes
            if over:
                raw = raw[: max_bytes - received]
            received += len(raw)
            chunk = inflater.feed(raw, room + 1)
            if len(chunk) > room:
                chunks.append(chunk[:room])
                return b"".join(chunks), False
            chunks.append(chunk)
            size += len(chunk)
            if inflater.finished:
                return b"".join(chunks), True
            if over:
                return b"".join(chunks), False
    except httpx.TimeoutException as exc:
        raise FetchError(f"web_fetch: {shown} timed out while sending its body ({_timeout_kind(exc)}).") from None
    except httpx.HTTPError as exc:
        raise FetchError(f"web_fetch: the download of {shown} failed: {_reason(exc)}.") from None
    return b"".join(chunks), True


def _timeout_kind(exc: Exception) -> str:
    import httpx

    if isinstance(exc, httpx.ConnectTimeout):
        return "no connection within connect_timeout"
    if isinstance(exc, httpx.ReadTimeout):
        return "no data within read_timeout"
    return "a timeout"


def _reason(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
