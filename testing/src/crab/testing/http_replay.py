"""Test kit for provider plugins: a real HTTP/1.1 server on 127.0.0.1 that replays recorded replies.

For crab's own provider plugins and for third-party ones alike. Standard library only (the
server is ``http.server``), so it costs nothing to import; the provider under test brings its
own HTTP client (crab-provider-kit's ``stream_call`` uses httpx).

A test scripts the replies the server gives to successive requests, then points the provider's
``base_url`` at ``server.url``:

- ``server.sse("tool_use.sse")``: an SSE fixture file (``#`` header lines dropped, events split
  at blank lines), sent with chunked transfer, one event per chunk. ``cut_after=N`` drops the
  connection before event ``N`` (a mid-stream disconnect); ``stall_after=N`` goes idle there for
  ``stall_seconds`` and then closes (an idle stream); ``headers=`` adds response headers.
- ``server.error(429, {"error": ...}, {"retry-after": "1"})``: a status with a JSON (or raw
  bytes) body and headers.
- ``server.reset()``: the connection is reset before any response byte.
- ``HttpReply(event_gap=0.2)`` waits that long before each event after the first;
  ``HttpReply(keepalive_every=0.2)``: after its events (if any), ``: keep-alive`` comments at that
  interval until the client leaves; ``HttpReply(silent=True)``: accept the request and never
  answer. Both are for deadline tests: they end when the client disconnects or the server closes.
- ``HttpReply(...)`` directly for anything else (another status or content type on a stream).

Requests are recorded in ``server.requests`` (path, lower-cased headers, parsed JSON body, arrival
time on the ``time.monotonic`` clock), so a test can check what was sent and how long retries
waited. A request with no scripted reply left gets a 500. ``server.provider_table(key_env)`` is a
provider config table aimed at the server with tiny retry delays (keys that
``crab_provider_kit.read_http_options`` reads).

``collect_stream`` runs one ``Provider.stream`` to the end. ``run_crab`` and ``find_secret`` are
for end-to-end key-leak tests: run ``crab`` as a subprocess with its own ``CRAB_HOME``, then list
every place (stdout, stderr, a file under the home) a secret turns up.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crab._contracts.events import StreamEvent
    from crab._contracts.providers import ModelRequest, Provider

_UNSCRIPTED = b'{"error":{"message":"unscripted"}}'


def sse_events(path: Path) -> list[bytes]:
    """The SSE events of a fixture file (its ``#`` header dropped), each ending in a blank line."""
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    blocks = "\n".join(lines).strip("\n").split("\n\n")
    return [(block + "\n\n").encode() for block in blocks if block.strip()]


def sse_bytes(path: Path) -> bytes:
    """A fixture file's SSE bytes, header dropped: what a server would send, in one piece."""
    return b"".join(sse_events(path))


@dataclass
class HttpReply:
    """One scripted reply. With ``events`` it is a chunked stream, else ``body`` in one piece."""

    status: int = 200
    events: list[bytes] = field(default_factory=list)
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/event-stream"
    cut_after: int | None = None
    stall_after: int | None = None
    stall_seconds: float = 3.0
    reset: bool = False
    keepalive_every: float | None = None
    silent: bool = False
    event_gap: float = 0.0


@dataclass
class RecordedRequest:
    """A request the server received: ``headers`` lower-cased, ``body`` parsed from JSON."""

    path: str
    headers: dict[str, str]
    body: Any
    at: float


class ReplayServer:
    """The replaying server, listening from construction on a free port until ``close()``.

    ``fixtures`` is the folder ``sse(name)`` reads; ``prefix`` is appended to ``url`` (the path
    a provider's ``base_url`` carries, e.g. ``/v1``). Usable as a context manager.
    """

    def __init__(self, fixtures: Path | None = None, prefix: str = "/v1") -> None:
        self.fixtures = fixtures
        self.prefix = prefix
        self.replies: list[HttpReply] = []
        self.requests: list[RecordedRequest] = []
        self.closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                server.requests.append(RecordedRequest(self.path, headers, json.loads(raw), time.monotonic()))
                reply = server.replies.pop(0) if server.replies else HttpReply(500, body=_UNSCRIPTED)
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
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{self.prefix}"

    def script(self, *replies: HttpReply) -> None:
        """Queue replies, one per coming request, in order."""
        self.replies.extend(replies)

    def sse(self, name: str, **options: Any) -> HttpReply:
        """A stream of the fixture file ``name``; ``options`` are ``HttpReply`` fields."""
        if self.fixtures is None:
            raise ValueError("ReplayServer(fixtures=...) names no folder to read SSE fixtures from")
        return HttpReply(events=sse_events(self.fixtures / name), **options)

    def error(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> HttpReply:
        """A status with ``payload`` as JSON (bytes are sent as they are)."""
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return HttpReply(status, body=body, headers=headers or {}, content_type="application/json")

    def reset(self) -> HttpReply:
        """A connection reset before the first response byte."""
        return HttpReply(reset=True)

    def provider_table(self, key_env: str, **overrides: Any) -> dict[str, Any]:
        """A provider config table aimed at this server: the key in ``key_env``, tiny backoff delays."""
        table: dict[str, Any] = {
            "base_url": self.url,
            "api_key_env": key_env,
            "retry_base_delay": 0.01,
            "idle_timeout": 5.0,
            "connect_timeout": 5.0,
        }
        table.update(overrides)
        return table

    def answer(self, handler: BaseHTTPRequestHandler, reply: HttpReply) -> None:
        sock = handler.connection
        if reply.silent:
            handler.close_connection = True
            sock.settimeout(0.05)
            while not self.closing.is_set():
                try:
                    if not sock.recv(1024):
                        return  # the client gave up
                except TimeoutError:
                    continue
            return
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
        if not reply.events and reply.keepalive_every is None:
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
            if number and reply.event_gap and self.closing.wait(reply.event_gap):
                return
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            handler.wfile.flush()
        if reply.keepalive_every is not None:
            comment = b": keep-alive\n\n"
            handler.close_connection = True
            while not self.closing.wait(reply.keepalive_every):
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(comment), comment))  # OSError once the client left
                handler.wfile.flush()
            return
        handler.wfile.write(b"0\r\n\r\n")

    def close(self) -> None:
        self.closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> ReplayServer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


def collect_stream(provider: Provider, request: ModelRequest) -> tuple[list[StreamEvent], Exception | None]:
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


CRAB = shutil.which("crab", path=str(Path(sys.executable).parent))
"""The ``crab`` console script beside this interpreter, or ``None`` when it is not installed."""


def run_crab(
    home: Path, *args: str, env: Mapping[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``crab ARGS`` as a subprocess in ``home``, which is also its ``CRAB_HOME``.

    Inherits the environment minus every ``*_API_KEY`` variable (so a developer's real key
    cannot leak in), plus ``NO_COLOR=1`` and ``env``.
    """
    if CRAB is None:
        raise RuntimeError("the crab console script is not installed beside this Python")
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environ.update({"CRAB_HOME": str(home), "NO_COLOR": "1", **(env or {})})
    return subprocess.run(
        [CRAB, *args], capture_output=True, text=True, env=environ, cwd=home, timeout=timeout, check=False
    )


def find_secret(
    home: Path, result: subprocess.CompletedProcess[str], secret: str, skip: Sequence[str] = ()
) -> list[str]:
    """Every place ``secret`` shows up: ``"stdout"``, ``"stderr"``, or a file under ``home``.

    Files whose name is in ``skip`` (say ``auth.json``, which is meant to hold the key) are not read.
    """
    found = [name for name, text in (("stdout", result.stdout), ("stderr", result.stderr)) if secret in text]
    for path in home.rglob("*"):
        if path.is_file() and path.name not in skip and secret.encode() in path.read_bytes():
            found.append(str(path))
    return found
