"""Ctrl-C during a long model call on a worker stops the call while the model streams, on a real
Temporal dev server with a real ``crab worker``: the model is a loopback HTTP server streaming
a reply that would last two minutes (read by a provider plugin installed on the worker, as a
remote model's stream is read), and the user pays for what it streams until the worker closes
the connection.

A model call is a local activity, which holds its workflow task until it ends, and the worker
sees the ``abort`` signal only when the SDK's core extends that task, at 80% of the turn's
workflow-task timeout: 8 s after the task began with Temporal's default (10 s), 1.6 s with
crab's (``crab_temporal.client.TASK_TIMEOUT``, 2 s). After the Ctrl-C the server slows to a chunk
every ``AFTER`` seconds; the test asserts what the server saw: the connection closed before it
sent its second chunk after the Ctrl-C (2 × ``AFTER`` = 5 s, three times the most the worker
waits now, where it waited about 7.5 s before), one request in all, and the turn aborted."""

from __future__ import annotations

import base64
import json
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from temporal_site import DEADLINE, Site, Worker, temporal_binary, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("crab-temporal-server")]

PLUGINS = "slow-model,store-sqlite,temporal"
BEFORE = 0.2
"""Seconds between two chunks of the stream before the Ctrl-C."""
AFTER = 2.5
"""Seconds between two chunks after it."""
LENGTH = 120.0
"""Seconds the whole reply would stream."""

SLOW_MODEL_PLUGIN = '''
"""A provider for crab-temporal's tests: its reply is the stream of the HTTP server at
$SLOW_MODEL_URL (the test's, on 127.0.0.1), a text delta a line, read as a remote model's is."""
import os

import crab
import httpx
from crab.events import MessageEnd, TextDelta
from crab.messages import AssistantMessage


class SlowModel:
    name = "slow"

    def __init__(self, config):
        self.config = config

    def models(self):
        return [crab.ModelInfo(id="model", provider="slow", context_window=100_000)]

    def check(self, model):
        return None

    async def stream(self, request):
        text = []
        async with httpx.AsyncClient(timeout=None) as client:
            async with client.stream("POST", os.environ["SLOW_MODEL_URL"], content=b"{}") as response:
                async for line in response.aiter_lines():
                    if line:
                        text.append(line)
                        yield TextDelta(line)
        reply = AssistantMessage(content="".join(text), stop_reason="end", model=request.model, provider="slow")
        yield MessageEnd(reply)


@crab.hookimpl
def crab_providers(config):
    return [SlowModel(config)]
'''


@dataclass
class SlowServer:
    """The model's end of the wire: what it sent, and when it saw the worker hang up."""

    requests: int = 0
    first: threading.Event = field(default_factory=threading.Event)
    aborted: threading.Event = field(default_factory=threading.Event)
    closed: threading.Event = field(default_factory=threading.Event)
    sent_after_abort: int = 0
    finished: bool = False

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        sock = handler.connection
        end = time.monotonic() + LENGTH
        try:
            handler.wfile.write(b"token 0\n")
            handler.wfile.flush()
            self.first.set()
            sent = 0
            while time.monotonic() < end:
                aborted = self.aborted.is_set()
                readable, _, _ = select.select([sock], [], [], AFTER if aborted else BEFORE)
                if readable and not sock.recv(1):  # readable with nothing to read: the worker hung up
                    return
                sent += 1
                handler.wfile.write(f"token {sent}\n".encode())
                handler.wfile.flush()
                if aborted:
                    self.sent_after_abort += 1
            self.finished = True
        except OSError:
            pass
        finally:
            self.closed.set()


@pytest.fixture
def slow_server() -> Iterator[tuple[SlowServer, str]]:
    state = SlowServer()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return None

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            state.requests += 1
            self.send_response(200)
            self.send_header("content-type", "text/plain")
            self.end_headers()  # no length: the body lasts until the connection closes (HTTP/1.0)
            state.serve(self)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}/v1/stream"
    finally:
        server.shutdown()
        server.server_close()


def install_slow_model(site: Site, url: str) -> None:
    """The slow provider as an installed plugin on PYTHONPATH (the worker's and the client's)."""
    folder = site.root / "slow-model-site"
    folder.mkdir()
    (folder / "crab_slow_model.py").write_text(SLOW_MODEL_PLUGIN)
    dist = folder / "crab_slow_model-0.0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crab-slow-model\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text("[crab]\nslow-model = crab_slow_model\n")
    site.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), site.env.get("PYTHONPATH")]))
    site.env["SLOW_MODEL_URL"] = url


def start_worker(site: Site) -> Worker:
    log = site.root / "worker.log"
    command = site.crab("worker", "--plugins", PLUGINS, "-m", "slow/model", "--yolo")
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=site.workspace, env=site.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    worker = Worker("slow", process, log)
    site.workers.append(worker)
    wait_for(
        lambda: "crab worker: running turns" in log.read_text(errors="replace") or process.poll() is not None,
        "the worker to start",
    )
    assert process.poll() is None, log.read_text(errors="replace")
    return worker


def workflow_result(site: Site, session_id: str) -> dict[str, Any] | None:
    """The turn's workflow result once it completed, else None."""
    binary = temporal_binary()
    assert binary is not None
    command = [binary, "workflow", "show", "-w", f"crab-session-{session_id}", "--address", site.address, "-o", "json"]
    shown = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    if shown.returncode != 0:
        return None
    for event in json.loads(shown.stdout).get("events", []):
        completed = event.get("workflowExecutionCompletedEventAttributes")
        if completed is not None:
            return dict(json.loads(_decoded(completed["result"]["payloads"][0]["data"])))
    return None


def _decoded(data: str) -> str:
    return base64.b64decode(data).decode()


def test_ctrl_c_during_a_long_model_call_closes_the_models_stream_before_its_second_chunk_after(
    site: Site, slow_server: tuple[SlowServer, str]
):
    server, url = slow_server
    install_slow_model(site, url)
    start_worker(site)
    client = subprocess.Popen(
        site.crab("temporal", "run", "--plugins", PLUGINS, "-m", "slow/model", "write a long story"),
        cwd=site.workspace,
        env=site.client_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert server.first.wait(DEADLINE), "the model call never reached the model"
        server.aborted.set()
        client.send_signal(signal.SIGINT)  # Ctrl-C: the client signals abort to the turn's workflow
        _, err = client.communicate(timeout=DEADLINE)
    finally:
        if client.poll() is None:
            os.killpg(client.pid, signal.SIGKILL)
            client.wait(30)
    assert client.returncode == 130, err
    assert server.closed.wait(DEADLINE), "the worker never closed the model's stream"
    assert not server.finished
    # What the user pays for: at most one chunk streamed after the Ctrl-C (the worker saw the
    # abort at its workflow task's next extension and cancelled the call), not the two or three
    # of a workflow task extended 8 s after it began.
    assert server.sent_after_abort <= 1, f"{server.sent_after_abort} chunks streamed after the abort"
    session_id = site.only_session()
    result = wait_for(lambda: workflow_result(site, session_id), "the aborted turn's end")
    assert result["stop"] == "aborted"
    assert server.requests == 1  # the model was not asked again
    assert "Traceback" not in Path(site.root / "worker.log").read_text(errors="replace")
