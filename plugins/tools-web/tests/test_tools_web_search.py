"""web_search against fake back-ends on 127.0.0.1 (SearXNG and Brave answers), and the key's redaction.

Wire formats, recorded from the back-ends' documentation:
- SearXNG ``GET /search?q=…&format=json`` answers ``{"query", "number_of_results", "results":
  [{"url", "title", "content", "engine", "engines", "score", "category"}], "answers",
  "suggestions", …}`` (docs.searxng.org, "Search API").
- Brave ``GET https://api.search.brave.com/res/v1/web/search?q=…&count=…`` with the key in the
  ``X-Subscription-Token`` header answers a ``WebSearchApiResponse``: ``{"type": "search",
  "query": {"original": …}, "web": {"type": "search", "results": [{"type": "search_result",
  "title", "url", "description", …}]}}`` (api-dashboard.search.brave.com/docs). Brave is a paid
  API, so only this replay runs here.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import crab_tools_web
import pytest
from crab import ToolResult
from crab.events import ToolResultEvent
from crab.messages import ToolResultMessage
from crab.secrets import known_secrets
from crab.testing import make_config

Call = Callable[..., ToolResult]
KEY = "brv-test-key-0123456789abcdef"

SEARXNG_ANSWER = {
    "query": "crab agent",
    "number_of_results": 0,
    "results": [
        {
            "url": f"https://example.org/{n}",
            "title": f"Result {n}",
            "content": f"Snippet number {n}.",
            "engine": "duckduckgo",
            "engines": ["duckduckgo"],
            "score": 1.0,
            "category": "general",
        }
        for n in range(1, 16)
    ],
    "answers": [],
    "corrections": [],
    "infoboxes": [],
    "suggestions": [],
    "unresponsive_engines": [],
}

BRAVE_ANSWER = {
    "type": "search",
    "query": {"original": "crab agent", "more_results_available": True},
    "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": False}]},
    "web": {
        "type": "search",
        "family_friendly": True,
        "results": [
            {
                "type": "search_result",
                "title": "Crab framework",
                "url": "https://crab.example/",
                "description": "A <strong>small</strong> agent framework. The key is " + KEY,
                "is_source_local": False,
                "is_source_both": False,
                "language": "en",
                "family_friendly": True,
                "meta_url": {"scheme": "https", "netloc": "crab.example", "hostname": "crab.example", "path": ""},
            }
        ],
    },
}


@dataclass
class Backend:
    port: int
    requests: list[tuple[str, dict[str, list[str]], dict[str, str]]] = field(default_factory=list)
    status: int = 200
    body: bytes = b""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def backend() -> Iterator[Backend]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    state = Backend(port=httpd.server_address[1])

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return None

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            state.requests.append((parts.path, parse_qs(parts.query), dict(self.headers.items())))
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(state.body)))
            self.end_headers()
            self.wfile.write(state.body)

    httpd.RequestHandlerClass = Handler
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield state
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def no_key_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BRAVE_SEARCH_API_KEY", raising=False)


def test_without_a_backend_it_says_how_to_configure_one(call: Call) -> None:
    result = call("web_search", query="anything")
    assert result.is_error
    assert "no search back-end" in result.content
    assert "searxng_url" in result.content and "BRAVE_SEARCH_API_KEY" in result.content


def test_searxng_backend(backend: Backend, call: Call, settings: dict[str, Any]) -> None:
    backend.body = json.dumps(SEARXNG_ANSWER).encode()
    settings["searxng_url"] = backend.url
    settings["allow_hosts"] = []  # the back-end is the user's own choice: no allow_hosts needed
    result = call("web_search", query="crab agent", count=3)
    assert not result.is_error, result.content
    path, query, _ = backend.requests[-1]
    assert path == "/search" and query["q"] == ["crab agent"] and query["format"] == ["json"]
    assert "1. Result 1\n   https://example.org/1\n   Snippet number 1." in result.content
    assert "3. Result 3" in result.content and "4. Result 4" not in result.content
    assert "<<<web-content" in result.content and "not from the user" in result.content


def test_count_is_capped_by_max_results(backend: Backend, call: Call, settings: dict[str, Any]) -> None:
    backend.body = json.dumps(SEARXNG_ANSWER).encode()
    settings["searxng_url"] = backend.url + "/search"
    settings["max_results"] = 5
    result = call("web_search", query="crab", count=50)
    assert "5. Result 5" in result.content and "6. Result 6" not in result.content


def test_searxng_without_json_format_explains(backend: Backend, call: Call, settings: dict[str, Any]) -> None:
    backend.status, backend.body = 403, b"Forbidden"
    settings["searxng_url"] = backend.url
    result = call("web_search", query="crab")
    assert result.is_error and "HTTP 403" in result.content and "json format" in result.content


def test_unreachable_backend_is_one_line(call: Call, settings: dict[str, Any]) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings["searxng_url"] = f"http://127.0.0.1:{port}"
    result = call("web_search", query="crab")
    assert result.is_error and "cannot reach the searxng back-end" in result.content
    assert "\n" not in result.content


def test_a_searxng_password_stays_out_of_messages(call: Call, settings: dict[str, Any]) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings["searxng_url"] = f"http://searcher:hunter2-long-password@127.0.0.1:{port}"
    result = call("web_search", query="crab")
    assert result.is_error and f"http://127.0.0.1:{port}/search" in result.content
    assert "hunter2" not in result.content and "searcher" not in result.content


def test_brave_backend_sends_the_key_in_its_header(
    backend: Backend, call: Call, settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", KEY)
    backend.body = json.dumps(BRAVE_ANSWER).encode()
    settings["brave_url"] = backend.url + "/res/v1/web/search"
    result = call("web_search", query="crab agent", count=4)
    assert not result.is_error, result.content
    path, query, headers = backend.requests[-1]
    assert path == "/res/v1/web/search" and query["q"] == ["crab agent"] and query["count"] == ["4"]
    assert headers["X-Subscription-Token"] == KEY
    assert KEY not in json.dumps(query)
    assert "1. Crab framework\n   https://crab.example/" in result.content
    assert KEY not in result.content and "The key is [redacted]" in result.content  # echoed back: masked


def test_brave_refusal_never_shows_the_key(
    backend: Backend, call: Call, settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", KEY)
    backend.status, backend.body = 401, json.dumps({"error": f"bad token {KEY}"}).encode()
    settings["brave_url"] = backend.url
    result = call("web_search", query="crab")
    assert result.is_error and "HTTP 401" in result.content and "BRAVE_SEARCH_API_KEY" in result.content
    assert KEY not in result.content


def test_search_backend_choice(backend: Backend, call: Call, settings: dict[str, Any]) -> None:
    settings["search_backend"] = "brave"
    settings["searxng_url"] = backend.url  # set, but brave was asked for and has no key
    result = call("web_search", query="crab")
    assert result.is_error and "no search back-end" in result.content


def test_key_named_in_config_is_a_known_secret() -> None:
    config = make_config({"plugins.tools-web.brave_api_key_env": "MY_SEARCH_VAR"})
    assert "custom-value-123456789" in known_secrets(config, env={"MY_SEARCH_VAR": "custom-value-123456789"})


def test_key_is_redacted_from_what_the_loop_shows_and_stores(
    backend: Backend, crab_agent: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The back-end echoes the key inside a result snippet: the event renderers see and the
    # message the model gets next must both have it masked.
    monkeypatch.setenv("BRAVE_SEARCH_API_KEY", KEY)
    backend.body = json.dumps(BRAVE_ANSWER).encode()
    h = crab_agent(
        [[{"tool": "web_search", "args": {"query": "crab agent"}}], [{"text": "done"}]],
        plugins={"tools-web": crab_tools_web},
        config={"crab.permissions": "yolo", "plugins.tools-web.brave_url": backend.url},
    )
    outcome = h.run("search")
    assert outcome.text == "done"
    assert backend.requests[-1][2]["X-Subscription-Token"] == KEY
    shown = [e for e in h.events_of(ToolResultEvent)]
    assert shown and all(KEY not in json.dumps(e.__dict__, default=str) for e in shown)
    assert "Crab framework" in json.dumps([e.__dict__ for e in shown], default=str)
    for message in h.requests[-1].messages:
        if isinstance(message, ToolResultMessage):
            assert KEY not in message.content
