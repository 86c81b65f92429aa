"""web_search's back-ends: a SearXNG instance's JSON API, or the Brave Search API with a key.

Both are the user's choice (``searxng_url``, ``brave_api_key_env`` and ``brave_url`` are
trust-only), so the back-end is reached wherever it lives, a SearXNG on localhost included; the
model only chooses the query. The key is read from the environment at call time, sent only in
the ``X-Subscription-Token`` header to ``brave_url``, and masked in every message. With no
back-end the result says how to configure one; nothing scrapes a search engine's HTML.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from crab.secrets import Redactor

from crab_tools_web.fence import LABEL, fence
from crab_tools_web.fetch import USER_AGENT
from crab_tools_web.settings import WebSettings

if TYPE_CHECKING:
    import httpx

TITLE_CHARS = 200
SNIPPET_CHARS = 500
URL_CHARS = 500
MAX_ANSWER_BYTES = 5_000_000


class SearchError(Exception):
    """The search failed: one line for the model (secrets already masked)."""


@dataclass(frozen=True, slots=True)
class Hit:
    title: str
    url: str
    snippet: str


@dataclass(frozen=True, slots=True)
class Backend:
    """Where one search goes: ``kind`` is ``searxng`` or ``brave``; ``key`` only for brave."""

    kind: str
    url: str
    key: str | None = field(default=None, repr=False)

    @property
    def shown(self) -> str:
        """The URL without user-info (a SearXNG behind basic auth keeps its password out of messages)."""
        parts = urlsplit(self.url)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))


def not_configured(settings: WebSettings) -> str:
    """What web_search answers with no back-end: how the user configures one."""
    return (
        "web_search has no search back-end configured, so it cannot search. The user can add one in "
        'their crab config: `[plugins.tools-web] searxng_url = "http://localhost:8888"` (a SearXNG '
        "instance with the json format enabled in its settings.yml), or a Brave Search API key in "
        f"the environment variable {settings.brave_api_key_env} (named by [plugins.tools-web] "
        "brave_api_key_env). Meanwhile web_fetch can read a page whose URL you know."
    )


def choose_backend(settings: WebSettings, env: Mapping[str, str] | None = None) -> Backend | None:
    """The back-end ``search_backend`` picks (``auto``: SearXNG when set, else Brave with a key)."""
    environ = os.environ if env is None else env
    key = environ.get(settings.brave_api_key_env, "").strip() or None
    wanted = settings.search_backend
    if wanted in ("auto", "searxng") and settings.searxng_url:
        return Backend("searxng", searxng_endpoint(settings.searxng_url))
    if wanted in ("auto", "brave") and key:
        return Backend("brave", settings.brave_url, key)
    return None


def searxng_endpoint(url: str) -> str:
    base = url.rstrip("/")
    return base if base.endswith("/search") else base + "/search"


def _clip(value: Any, limit: int) -> str:
    text = " ".join(str(value or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_searxng(data: Any) -> list[Hit]:
    """Hits from SearXNG's ``format=json`` answer (``results``: ``title``, ``url``, ``content``)."""
    results = data.get("results") if isinstance(data, Mapping) else None
    if not isinstance(results, list):
        raise SearchError("web_search: the SearXNG answer has no results list; is its json format enabled?")
    return [
        Hit(_clip(r.get("title"), TITLE_CHARS), _clip(r.get("url"), URL_CHARS), _clip(r.get("content"), SNIPPET_CHARS))
        for r in results
        if isinstance(r, Mapping) and r.get("url")
    ]


def parse_brave(data: Any) -> list[Hit]:
    """Hits from Brave's web search answer (``web.results``: ``title``, ``url``, ``description``)."""
    web = data.get("web") if isinstance(data, Mapping) else None
    results = web.get("results") if isinstance(web, Mapping) else []
    if not isinstance(results, list):
        raise SearchError("web_search: the Brave answer's web.results is not a list.")
    return [
        Hit(
            _clip(r.get("title"), TITLE_CHARS),
            _clip(r.get("url"), URL_CHARS),
            _clip(r.get("description"), SNIPPET_CHARS),
        )
        for r in results
        if isinstance(r, Mapping) and r.get("url")
    ]


def render_hits(query: str, hits: list[Hit], backend: str) -> str:
    """The tool result: numbered hits inside the web-content fence."""
    label = f"[web_search results for {query!r} from {backend}: {len(hits)} hits. {LABEL}]"
    if not hits:
        return fence("(no results)", label, "[Try other words.]")
    lines = []
    for number, hit in enumerate(hits, 1):
        lines.append(f"{number}. {hit.title or '(no title)'}\n   {hit.url}")
        if hit.snippet:
            lines.append(f"   {hit.snippet}")
    return fence("\n".join(lines), label, "[Read a result with web_fetch.]")


async def search(query: str, count: int, settings: WebSettings, backend: Backend) -> list[Hit]:
    """Ask ``backend`` for at most ``count`` hits, within the timeouts; ``SearchError`` on failure."""
    password = urlsplit(backend.url).password
    redactor = Redactor([secret for secret in (backend.key, password) if secret])
    try:
        async with asyncio.timeout(settings.total_timeout):
            hits = await _ask(query, count, settings, backend)
    except TimeoutError:
        raise SearchError(
            f"web_search: the {backend.kind} back-end did not answer within "
            f"{settings.total_timeout:g} s (total_timeout)."
        ) from None
    except SearchError as exc:
        raise SearchError(redactor.text(str(exc))) from None
    # a back-end that echoes the key (in a snippet, a URL) must not hand it to the model
    return [Hit(redactor.text(h.title), redactor.text(h.url), redactor.text(h.snippet)) for h in hits[:count]]


async def _ask(query: str, count: int, settings: WebSettings, backend: Backend) -> list[Hit]:
    import httpx

    timeout = httpx.Timeout(
        connect=settings.connect_timeout,
        read=settings.read_timeout,
        write=settings.read_timeout,
        pool=settings.connect_timeout,
    )
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if backend.kind == "brave":
        params: dict[str, str | int] = {"q": query, "count": min(count, 20)}
        assert backend.key is not None
        headers["X-Subscription-Token"] = backend.key
    else:
        params = {"q": query, "format": "json"}
    async with httpx.AsyncClient(timeout=timeout, trust_env=False, follow_redirects=False) as client:
        request = client.build_request("GET", backend.url, params=params, headers=headers)
        try:
            response = await client.send(request, stream=True)
            try:
                body = await _read_capped(response)
            finally:
                await response.aclose()
        except httpx.TimeoutException:
            raise SearchError(f"web_search: the {backend.kind} back-end at {backend.shown} timed out.") from None
        except httpx.HTTPError as exc:
            reason = (str(exc).strip() or type(exc).__name__).splitlines()[0][:300]
            raise SearchError(
                f"web_search: cannot reach the {backend.kind} back-end at {backend.shown}: {reason}."
            ) from None
    if response.status_code in (401, 403) and backend.kind == "brave":
        raise SearchError(
            f"web_search: Brave refused the key (HTTP {response.status_code}); the user should check "
            f"{settings.brave_api_key_env}."
        )
    if response.status_code != 200:
        raise SearchError(
            f"web_search: the {backend.kind} back-end at {backend.shown} answered HTTP {response.status_code}"
            + (
                " (is the json format enabled in SearXNG's settings.yml?)"
                if backend.kind == "searxng" and response.status_code == 403
                else ""
            )
            + "."
        )
    if body is None:
        raise SearchError(
            f"web_search: the {backend.kind} back-end's answer is larger than {MAX_ANSWER_BYTES:,} bytes."
        )
    try:
        data = json.loads(body)
    except ValueError:
        raise SearchError(f"web_search: the {backend.kind} back-end did not answer with JSON.") from None
    return parse_brave(data) if backend.kind == "brave" else parse_searxng(data)


async def _read_capped(response: httpx.Response) -> bytes | None:
    """The body, or None once it passes ``MAX_ANSWER_BYTES`` (the rest is not read)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
