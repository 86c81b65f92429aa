"""Test kit for the Anthropic provider: a real HTTP/1.1 server on 127.0.0.1 replaying fixture files.

Each test scripts the replies the server gives to successive requests: an SSE fixture (sent as
chunked transfer, one event per chunk, optionally cut or stalled), an error status with a body,
or a connection closed before any response.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from crab.events import StreamEvent
from crab.providers import ModelRequest
from crab_provider_anthropic.provider import AnthropicProvider

FIXTURES = Path(__file__).parent / "fixtures"
KEY = "sk-ant-test-4c3b2a1908f7e6d5c4b3a291"
KEY_ENV = "CRAB_TEST_ANTHROPIC_KEY"


def fixture_events(name: str) -> list[bytes]:
    """The SSE events of a fixture file (its ``#`` header dropped), each ending in a blank line."""
    lines = [line for line in (FIXTURES / name).read_text().splitlines() if not line.startswith("#")]
    blocks = "\n".join(lines).strip("\n").split("\n\n")
    return [(block + "\n\n").encode() for block in blocks if block.strip()]


def fixture_bytes(name: str) -> bytes:
    return b"".join(fixture_events(name))


@dataclass
class Reply:
    status: int = 200
    events: list[bytes] = field(default_factory=list)
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/event-stream"
    cut_after: int | None = None
    stall_after: int | None = None
    stall_seconds: float = 3.0
    reset: bool = False


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any
    at: float


class FakeServer:
    """The replaying server; ``script`` queues replies, ``requests`` records what arrived."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                server.requests.append(
                    Recorded(
                        self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw), time.monotonic()
                    )
                )
                reply = (
                    server.replies.pop(0) if server.replies else Reply(500, body=b'{"error":{"message":"unscripted"}}')
                )
                try:
                    server.answer(self, reply)
                except OSError:
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def sse(self, name: str, **options: Any) -> Reply:
        return Reply(events=fixture_events(name), **options)

    def error(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return Reply(status, body=body, headers=headers or {}, content_type="application/json")

    def reset(self) -> Reply:
        return Reply(reset=True)

    def answer(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        sock = handler.connection
        if reply.reset:
            # Linger 0 makes close() send RST: a connection reset before the first byte.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.close_connection = True
            sock.close()
            return
        handler.send_response(reply.status)
        handler.send_header("content-type", reply.content_type)
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        if not reply.events:
            handler.send_header("content-length", str(len(reply.body)))
            handler.end_headers()
            handler.wfile.write(reply.body)
            return
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()
        for number, event in enumerate(reply.events):
            if number == reply.cut_after:
                handler.wfile.flush()
                handler.close_connection = True
                sock.shutdown(socket.SHUT_RDWR)
                return
            if number == reply.stall_after:
                time.sleep(reply.stall_seconds)
                handler.close_connection = True
                return
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            handler.wfile.flush()
        handler.wfile.write(b"0\r\n\r\n")

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads the developer's real ~/.crab or key variables."""
    home = tmp_path / "crab-home"
    monkeypatch.setenv("CRAB_HOME", str(home))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return home


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.close()


@pytest.fixture
def make_provider(server: FakeServer) -> Callable[..., AnthropicProvider]:
    """A provider aimed at the fake server with a test key and tiny backoff delays."""

    def make(**overrides: Any) -> AnthropicProvider:
        table: dict[str, Any] = {
            "base_url": server.url,
            "api_key_env": KEY_ENV,
            "retry_base_delay": 0.01,
            "idle_timeout": 5.0,
            "connect_timeout": 5.0,
        }
        table.update(overrides)
        return AnthropicProvider(table, env={KEY_ENV: KEY})

    return make


def collect(provider: AnthropicProvider, request: ModelRequest) -> tuple[list[StreamEvent], Exception | None]:
    """Run one ``stream`` to the end: the events it yielded and the error it raised, if any."""

    async def run() -> tuple[list[StreamEvent], Exception | None]:
        events: list[StreamEvent] = []
        try:
            async for event in provider.stream(request):
                events.append(event)
        except Exception as exc:
            return events, exc
        return events, None

    return asyncio.run(run())


@pytest.fixture
def run_stream() -> Callable[[AnthropicProvider, ModelRequest], tuple[list[StreamEvent], Exception | None]]:
    return collect


@pytest.fixture
def api_key() -> str:
    """The fake key every provider in these tests uses; it must never show up in any output."""
    return KEY


@pytest.fixture
def load_fixture() -> Callable[[str], bytes]:
    """A fixture file's SSE bytes, header dropped."""
    return fixture_bytes
