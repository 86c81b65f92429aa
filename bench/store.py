"""Benchmark of the session stores: append latency, resume time, and context build after a handoff.

Runs the JSONL, SQLite and in-memory stores side by side at 1k, 100k and 1M entries (``--max``
caps the largest size). Usage: ``.venv/bin/python bench/store.py [--max 1000000] [--dir DIR]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crab._builtin.memory_store import MemoryStore
from crab._contracts.storage import EntryType, Store
from crab._values.history import build_context

SIZES = (1_000, 100_000, 1_000_000)
TAIL = 40
"""Entries after the handoff anchor: what a resumed session actually needs."""
RESUME_REPEATS = 50


def turn(n: int) -> list[tuple[EntryType, dict[str, Any]]]:
    """One realistic agent step: a user message, a reply with a tool call, its result, a model call."""
    call = f"call_{n}"
    return [
        ("message", {"v": 1, "role": "user", "content": f"Please look at file number {n} and fix the bug in it."}),
        (
            "message",
            {
                "v": 1,
                "role": "assistant",
                "content": "I will read the file first.",
                "stop_reason": "tool_use",
                "tool_calls": [{"id": call, "name": "read", "arguments": {"path": f"src/module_{n}.py"}}],
                "usage": {"input_tokens": 1200 + n % 500, "output_tokens": 40, "cost": 0.0004},
                "model": "bench-model",
                "provider": "bench",
            },
        ),
        (
            "tool_result",
            {"v": 1, "role": "tool", "call_id": call, "name": "read", "content": f"{n}\tdef f():\n" * 20},
        ),
        (
            "event",
            {"kind": "model_call", "model": "bench-model", "provider": "bench", "usage": {"input_tokens": 1200}},
        ),
    ]


def entry_stream(count: int) -> list[tuple[EntryType, dict[str, Any]]]:
    items: list[tuple[EntryType, dict[str, Any]]] = []
    n = 0
    while len(items) < count:
        items.extend(turn(n))
        n += 1
    return items[:count]


@dataclass
class Row:
    store: str
    size: int
    append_median_us: float
    append_p99_us: float
    resume_ms: float
    context_ms: float
    full_ms: float


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(name: str, make: Callable[[], Store], size: int, reopen: bool) -> Row:
    """Append ``size`` entries, then a handoff and a short tail; time appends and reads."""
    store = make()
    await store.open()
    info = await store.create_session("/bench/project")
    latencies: list[float] = []
    clock = time.perf_counter
    items = entry_stream(size)
    items.append(("anchor", {"name": "bench", "kind": "handoff", "state": {"summary": "earlier work"}}))
    items.extend(entry_stream(TAIL))
    for kind, payload in items:
        start = clock()
        await store.append(info.id, kind, payload)
        latencies.append(clock() - start)
    if reopen:
        await store.close()
    total = len(items)
    del items
    # Like timeit: collect first and keep the collector out of the timed reads, so the figures
    # measure the store rather than how many objects the benchmark itself keeps alive.
    gc.collect()
    gc.disable()

    resume: list[float] = []
    context: list[float] = []
    reader = store
    for _ in range(RESUME_REPEATS):
        start = clock()
        if reopen:
            reader = make()
            await reader.open()
        await reader.get_session(info.id)
        recent = await reader.entries(info.id, since_handoff=True)
        loaded = clock()
        messages = build_context(recent)
        built = clock()
        if reopen:
            await reader.close()
        assert len(recent) == TAIL + 1
        assert messages
        resume.append(loaded - start)
        context.append(built - start)

    if reopen:
        reader = make()
        await reader.open()
    start = clock()
    everything = await reader.entries(info.id)
    full = clock() - start
    gc.enable()
    assert len(everything) == total
    await reader.close()
    del everything
    gc.collect()
    return Row(
        store=name,
        size=size,
        append_median_us=statistics.median(latencies) * 1e6,
        append_p99_us=percentile(latencies, 0.99) * 1e6,
        resume_ms=statistics.median(resume) * 1e3,
        context_ms=statistics.median(context) * 1e3,
        full_ms=full * 1e3,
    )


def stores(base: Path, size: int) -> list[tuple[str, Callable[[], Store], bool]]:
    from crab_store_sqlite import SqliteStore
    from crab_tape_jsonl import TapeStore

    folder = base / str(size)
    memory = MemoryStore()
    return [
        ("jsonl", lambda: TapeStore(folder / "sessions"), True),
        ("sqlite", lambda: SqliteStore(folder / "crab.db"), True),
        ("memory", lambda: memory, False),
    ]


HEADER = (
    f"{'store':<8}{'entries':>10}{'append p50':>13}{'append p99':>13}{'resume':>12}{'+context':>12}{'full read':>13}"
)


def format_row(row: Row) -> str:
    return (
        f"{row.store:<8}{row.size:>10,}{row.append_median_us:>10.1f} µs{row.append_p99_us:>10.1f} µs"
        f"{row.resume_ms:>9.2f} ms{row.context_ms:>9.2f} ms{row.full_ms:>10.1f} ms"
    )


def print_ratios(rows: list[Row]) -> None:
    print()
    print(f"Context build after a handoff ({TAIL} entries after it): resume + build_context,")
    print("as a ratio to the smallest session. Flat means it does not grow with the session's length.")
    for name in dict.fromkeys(r.store for r in rows):
        mine = [r for r in rows if r.store == name]
        base = mine[0].context_ms
        ratios = "  ".join(f"{r.size:>9,}: {r.context_ms / base:5.2f}x" for r in mine)
        print(f"  {name:<8}{ratios}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--max", type=int, default=1_000_000, help="largest session size to run (default 1000000)")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the databases (default: a temp dir)")
    args = parser.parse_args(argv)
    sizes = [s for s in SIZES if s <= args.max] or [args.max]
    base = Path(tempfile.mkdtemp(prefix="crab-bench-", dir=args.dir))
    print(f"crab store benchmark: sizes {', '.join(f'{s:,}' for s in sizes)}; data in {base}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; median of {RESUME_REPEATS} resumes")
    print("resume = what `crab run --session` does: a new store instance, open, get_session and")
    print("entries(since_handoff=True); +context adds build_context (memory: same instance, no open)")
    print()
    rows: list[Row] = []
    print(HEADER)
    try:
        for size in sizes:
            for name, make, reopen in stores(base, size):
                rows.append(asyncio.run(measure(name, make, size, reopen)))
                print(format_row(rows[-1]), flush=True)
            shutil.rmtree(base / str(size), ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print()
    print("Summary")
    print(HEADER)
    for row in sorted(rows, key=lambda r: (r.size, r.store)):
        print(format_row(row))
    print_ratios(sorted(rows, key=lambda r: (r.store, r.size)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
