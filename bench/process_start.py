"""Process-start benchmark: ``crab.processes.start`` beside a plain ``asyncio.create_subprocess_exec``
with ``spawn_options`` and ``track``, in one run, alternating, for N starts of ``true``.

It prints the parent's CPU time per start (user + system of this process, so other processes on
a shared machine do not count) and the wall time per start, for each way, and their ratio: what
the shield that lets a cancel mid-start end what started costs each tool command.

    python bench/process_start.py [--starts 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable

from crab import processes

Start = Callable[[str], Awaitable[asyncio.subprocess.Process]]


async def _plain(tag: str) -> asyncio.subprocess.Process:
    process = await asyncio.create_subprocess_exec("true", **processes.spawn_options(tag))
    processes.track(process.pid, tag)
    return process


async def _start(tag: str) -> asyncio.subprocess.Process:
    return await processes.start(["true"], tag)


async def _round(start: Start, starts: int) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(starts):
        process = await start(processes.new_tag())
        await process.wait()
        processes.untrack(process.pid)
    return (time.process_time() - cpu) / starts, (time.perf_counter() - wall) / starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    results: dict[str, list[tuple[float, float]]] = {"plain asyncio + track": [], "processes.start": []}

    async def run() -> None:
        for _ in range(options.rounds):  # alternating, so drift on the machine hits both alike
            results["plain asyncio + track"].append(await _round(_plain, options.starts))
            results["processes.start"].append(await _round(_start, options.starts))

    asyncio.run(run())
    medians = {
        name: (statistics.median(c for c, _ in rows), statistics.median(w for _, w in rows))
        for name, rows in results.items()
    }
    print(f"{options.starts} starts of `true` x {options.rounds} rounds, pid {os.getpid()}; median per start:")
    for name, (cpu, wall) in medians.items():
        print(f"  {name:24} CPU {cpu * 1000:7.3f} ms   wall {wall * 1000:7.3f} ms")
    base, new = medians["plain asyncio + track"], medians["processes.start"]
    print(f"  ratio start/plain: CPU {new[0] / base[0]:.2f}x, wall {new[1] / base[1]:.2f}x")


if __name__ == "__main__":
    main()
