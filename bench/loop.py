"""Loop overhead benchmark: 1,000 scripted model calls, each asking for one no-op tool call.

Side by side in one run: the same provider stream and tool calls driven by a bare loop (the
floor), then by crab's agent loop on the memory store and on each installed persistent store.
Prints per-iteration overhead over the floor (target: under 1 ms) and peak traced memory.

    python bench/loop.py [--iterations 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import tracemalloc
import types
from pathlib import Path

import crab
from crab._contracts.events import MessageEnd
from crab._contracts.tools import ToolContext
from crab.testing import AgentHarness, ScriptedProvider


@crab.tool
async def noop(n: int) -> str:
    """Do nothing."""
    return f"ok {n}"


PLUGIN = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [noop]))


def script(iterations: int) -> list:
    replies: list = [[{"tool": "noop", "args": {"n": i}}] for i in range(iterations)]
    replies.append([{"text": "done"}])
    return replies


async def bare_loop(iterations: int) -> None:
    provider = ScriptedProvider(script(iterations))
    request = crab.ModelRequest(model="scripted", system="", messages=())
    ctx = ToolContext("bench", Path("."))
    for _ in range(iterations + 1):
        async for event in provider.stream(request):
            if isinstance(event, MessageEnd):
                for call in event.message.tool_calls:
                    await noop.run(call.arguments, ctx)


def measure(label: str, run) -> tuple[str, float, float]:
    """Best of three timed runs, then one more under tracemalloc for the peak (it slows the run)."""
    elapsed = min(_timed(run) for _ in range(3))
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return label, elapsed, peak


def _timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def agent_run(iterations: int, store: object | None) -> None:
    harness = AgentHarness(
        script(iterations),
        plugins={"bench": PLUGIN},
        config={"crab.max_iterations": iterations + 5},
        workspace=Path(tempfile.mkdtemp()),
        store=store,  # type: ignore[arg-type]
    )
    try:
        outcome = harness.run("go")
        assert outcome.stop == "end", outcome
        assert outcome.tool_calls == iterations
    finally:
        harness.close()


def persistent_stores(root: Path) -> list[tuple[str, object]]:
    stores: list[tuple[str, object]] = []
    try:
        from crab_tape_jsonl.store import TapeStore

        stores.append(("agent loop, jsonl tape", TapeStore(root / "tape")))
    except ImportError:
        pass
    try:
        from crab_store_sqlite.store import SqliteStore

        stores.append(("agent loop, sqlite store", SqliteStore(root / "crab.db")))
    except ImportError:
        pass
    return stores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=1000)
    n = parser.parse_args().iterations
    root = Path(tempfile.mkdtemp(prefix="crab-bench-loop-"))
    rows = [measure("bare loop (floor)", lambda: asyncio.run(bare_loop(n)))]
    rows.append(measure("agent loop, memory store", lambda: agent_run(n, None)))
    for index, (label, _) in enumerate(persistent_stores(root)):
        # a fresh store object (and folder) per run, so runs do not share sessions
        rows.append(measure(label, lambda i=index: agent_run(n, persistent_stores(Path(tempfile.mkdtemp()))[i][1])))
    floor = rows[0][1]
    print(f"{n} iterations (one model call + one no-op tool call each); time: best of 3; memory: peak traced")
    print(f"{'run':<28} {'total':>9} {'per iter':>10} {'overhead/iter':>14} {'x floor':>8} {'peak mem':>10}")
    for label, elapsed, peak in rows:
        per = elapsed / n * 1000
        overhead = (elapsed - floor) / n * 1000
        print(
            f"{label:<28} {elapsed:>8.3f}s {per:>8.3f}ms {overhead:>12.3f}ms {elapsed / floor:>7.1f}x {peak / 1e6:>8.1f}MB"
        )
    memory_overhead = (rows[1][1] - floor) / n * 1000
    print(
        f"\ntarget: loop overhead under 1 ms per iteration (memory store): {'met' if memory_overhead < 1 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
