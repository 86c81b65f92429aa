"""Benchmark of crab-temporal: abort to model call stopped, while a long model call runs on a worker.

A model call runs as a local activity (crab_temporal.placement), inside the workflow task of the
worker that runs the turn, and a signal (``abort``) is read only between workflow tasks: the
SDK's core extends a workflow task held by a running local activity at 80% of the turn's
workflow-task timeout, and only then does the worker see the abort and cancel the call. This
bench measures what the user pays for: the time from the ``abort`` signal to the provider's
stream being closed.

The model is a loopback HTTP server (127.0.0.1) answering OpenAI's chat completions as a slow
stream: a content chunk every ``--every`` seconds (0.1) for ``--length`` seconds (120), in the wire
format of crab-provider-openai's recorded fixtures (``text_usage.sse``), read by the real
crab-provider-openai. The server notes when it sent the first chunk and when it saw the
connection closed (the socket readable with nothing to read: the client hung up). One ``crab
worker`` (a process of its own, as bench/temporal.py runs them) on Temporal's dev server.

Each round starts a turn, waits for the stream's first chunk, waits a random delay in [0.5, 8.5)
s (the abort comes at any phase of the workflow task's extension), signals ``abort`` and waits
for the server to see the stream closed and for the turn's end. Rounds alternate the two
settings of the turn's workflow-task timeout: ``old``, Temporal's default (10 s, as before
``crab_temporal.client.TASK_TIMEOUT``), and ``new`` (``TASK_TIMEOUT``). Reported per setting:
the median and largest time from the abort signal to the stream closed and to the turn's end,
and the workflow tasks of a turn whose one model call streams ``--steady`` seconds (30) to its
end (the extensions a long model call costs), with the workflow tasks that timed out in all.
Usage: ``.venv/bin/python bench/temporal_abort.py [--rounds 8] [--steady 30]``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import multiprocessing
import os
import random
import select
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from http.server import BaseHTTPRequestHandler

BENCH = Path(__file__).resolve().parent


def _bench_temporal() -> Any:
    """bench/temporal.py, beside this file (its dev server's start and a process's CPU)."""
    spec = importlib.util.spec_from_file_location("bench_temporal", BENCH / "temporal.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH_TEMPORAL = _bench_temporal()

OLD = 10.0
"""Temporal's default workflow-task timeout: what a turn was started with before ``TASK_TIMEOUT``."""


@dataclass
class Stream:
    """What the slow model server saw of one request (``time.monotonic()`` values)."""

    first: float | None = None
    closed: float | None = None
    chunks: int = 0
    finished: bool = False


@dataclass
class SlowModel:
    """OpenAI's chat completions on 127.0.0.1, streamed slowly; every request's ``Stream`` kept."""

    every: float
    length: float
    streams: list[Stream] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> str:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return None

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                stream = Stream()
                with model.lock:
                    model.streams.append(stream)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                model.serve(self, stream)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def serve(self, handler: BaseHTTPRequestHandler, stream: Stream) -> None:
        sock = handler.connection
        end = time.monotonic() + self.length
        try:
            handler.wfile.write(chunk({"role": "assistant", "content": ""}))
            handler.wfile.flush()
            stream.first = time.monotonic()
            while time.monotonic() < end:
                # Readable with nothing to read: the client hung up (the worker closed the stream).
                readable, _, _ = select.select([sock], [], [], self.every)
                if readable and not sock.recv(1):
                    stream.closed = time.monotonic()
                    return
                handler.wfile.write(chunk({"content": "tok "}))
                handler.wfile.flush()
                stream.chunks += 1
            handler.wfile.write(chunk({}, "stop"))
            usage = {"prompt_tokens": 10, "completion_tokens": stream.chunks, "total_tokens": 10 + stream.chunks}
            handler.wfile.write(sse({**HEAD, "choices": [], "usage": usage}))
            handler.wfile.write(sse("[DONE]"))
            handler.wfile.flush()
            stream.finished = True
        except OSError:
            stream.closed = stream.closed or time.monotonic()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


HEAD = {"id": "chatcmpl-slow", "object": "chat.completion.chunk", "created": 1732000000, "model": "slow"}


def sse(data: Any) -> bytes:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return sse({**HEAD, "choices": [choice], "usage": None})


def agent(folder: Path, base_url: str, address: str, queue: str) -> Any:
    import crab

    return crab.Agent(
        "openai/slow",
        plugins=["provider-openai", "store-sqlite", "temporal"],
        settings={
            "crab.store": "sqlite",
            "plugins.store-sqlite.path": str(folder / "sessions.db"),
            "plugins.provider-openai.base_url": base_url,
            "plugins.provider-openai.max_retries": 0,
            "plugins.temporal.address": address,
            "plugins.temporal.task_queue": queue,
        },
        user_config=False,
        project_config=False,
        environment=False,
        workspace=folder,
        permissions="yolo",
    )


def worker_main(folder: str, base_url: str, address: str, queue: str) -> None:
    from crab_temporal.settings import TemporalSettings
    from crab_temporal.worker import serve

    built = agent(Path(folder), base_url, address, queue)
    asyncio.run(serve(built, TemporalSettings.from_config(built.config)))
    os._exit(0)  # temporalio's threads may abort a finalizing interpreter (sdk-python#300)


async def wait_until(check: Any, deadline: float = 120.0) -> None:
    end = time.monotonic() + deadline
    while not check():
        if time.monotonic() > end:
            raise SystemExit("the bench waited too long: is the worker running?")
        await asyncio.sleep(0.01)


async def tasks_of(handle: Any) -> dict[str, int]:
    """The workflow tasks a turn's history holds: started, and timed out."""
    from temporalio.api.enums.v1 import EventType

    counts = {"workflow_tasks": 0, "timed_out": 0}
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            counts["workflow_tasks"] += 1
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
            counts["timed_out"] += 1
    return counts


async def one_turn(
    model: SlowModel,
    client: Any,
    crab_agent: Any,
    settings: Any,
    timeout: float,
    abort_after: float | None,
    server: int,
) -> dict[str, Any]:
    """One turn whose model call streams slowly: aborted ``abort_after`` seconds after the first
    chunk (None: streamed to its end); with the CPU the Temporal server (process ``server``) spent."""
    import crab_temporal.client as temporal_client
    from crab_temporal.client import start_turn, turn_arguments

    session = await crab_agent.turn_steps(None, title="abort bench")
    arguments = turn_arguments(crab_agent.config, settings, session, "write a long story")
    seen = len(model.streams)
    temporal_client.TASK_TIMEOUT = timeout
    cpu = BENCH_TEMPORAL.process_cpu(server)
    handle = await start_turn(client, settings, arguments)
    await wait_until(lambda: len(model.streams) > seen and model.streams[seen].first is not None)
    stream = model.streams[seen]
    row: dict[str, Any] = {"timeout": timeout}
    if abort_after is not None:
        await asyncio.sleep(abort_after)
        signalled = time.monotonic()
        await handle.signal("abort")
        await wait_until(lambda: stream.closed is not None or stream.finished, 300)
        result = await handle.result()
        ended = time.monotonic()
        row.update(
            abort_after=abort_after,
            to_closed=(stream.closed or float("nan")) - signalled,
            to_end=ended - signalled,
            stop=result["stop"],
        )
    else:
        result = await handle.result()
        row.update(stop=result["stop"], streamed=time.monotonic() - (stream.first or 0.0))
    row["server_cpu_ms"] = 1000 * (BENCH_TEMPORAL.process_cpu(server) - cpu)
    row.update(await tasks_of(handle))
    return row


async def bench(
    folder: Path, base_url: str, address: str, queue: str, model: SlowModel, args: Any, server: int
) -> list[dict[str, Any]]:
    from crab_temporal.client import TASK_TIMEOUT, connect
    from crab_temporal.settings import TemporalSettings

    rows: list[dict[str, Any]] = []
    async with agent(folder, base_url, address, queue) as crab_agent:
        settings = TemporalSettings.from_config(crab_agent.config)
        client = await connect(settings)
        pick = random.Random(args.seed)
        for _ in range(args.rounds):
            for timeout in (OLD, TASK_TIMEOUT):
                row = await one_turn(model, client, crab_agent, settings, timeout, pick.uniform(0.5, 8.5), server)
                print(json.dumps(row), flush=True)
                rows.append(row)
        if args.steady:
            model.length = args.steady
            for timeout in (OLD, TASK_TIMEOUT):
                row = await one_turn(model, client, crab_agent, settings, timeout, None, server)
                print(json.dumps(row), flush=True)
                rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8, help="aborted turns per setting")
    parser.add_argument("--every", type=float, default=0.1, help="seconds between two chunks of the stream")
    parser.add_argument("--length", type=float, default=120.0, help="seconds an aborted turn's stream would last")
    parser.add_argument("--steady", type=float, default=30.0, help="seconds of the model call left to end (0: none)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    # This folder, first on the path of a script run from it, holds bench/http.py, which would
    # shadow the standard library's http package (http.server here, httpx's http.client).
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != BENCH]
    model = SlowModel(args.every, args.length)
    base_url = model.start()
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server, address = BENCH_TEMPORAL.start_server(folder, in_memory=False, sqlite_defaults=False, flags=[])
        queue = f"bench-abort-{uuid.uuid4().hex[:8]}"
        worker = context.Process(target=worker_main, args=(str(folder), base_url, address, queue))
        worker.start()
        try:
            rows = asyncio.run(bench(folder, base_url, address, queue, model, args, server.pid))
        finally:
            os.kill(worker.pid or 0, signal.SIGTERM)
            worker.join(60)
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(60)
            model.stop()
    report(rows)
    sys.stdout.flush()
    os._exit(0)


def report(rows: list[dict[str, Any]]) -> None:
    print()
    print(
        f"{'workflow-task timeout':>22} {'abort to stream closed: median':>31} {'max':>6} {'to turn end: median':>20}"
        f" {'max':>6} {'WFT/turn':>9} {'timed out':>9}"
    )
    for timeout in sorted({row["timeout"] for row in rows}, reverse=True):
        aborted = [row for row in rows if row["timeout"] == timeout and "to_closed" in row]
        closed = [row["to_closed"] for row in aborted]
        ended = [row["to_end"] for row in aborted]
        print(
            f"{timeout:>20g} s {statistics.median(closed):>29.2f} s {max(closed):>4.2f} s"
            f" {statistics.median(ended):>18.2f} s {max(ended):>4.2f} s"
            f" {statistics.mean(row['workflow_tasks'] for row in aborted):>9.1f}"
            f" {sum(row['timed_out'] for row in aborted):>9}"
        )
    for row in rows:
        if "streamed" in row:
            print(
                f"a model call of {row['streamed']:.0f} s to its end, timeout {row['timeout']:g} s:"
                f" {row['workflow_tasks']} workflow tasks ({row['timed_out']} timed out),"
                f" the server's CPU {row['server_cpu_ms']:.0f} ms, stop {row['stop']}"
            )


if __name__ == "__main__":
    main()
