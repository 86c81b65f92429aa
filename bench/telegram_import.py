"""What a Telegram Bot API library costs ``crab serve telegram`` at start: CPU time and modules
that importing it adds to a process that has already loaded what ``crab serve`` loads anyway
(asyncio and, for crab's providers, httpx).

For each case it prints the median CPU time (user + system of the child, from ``wait4``, so other
processes on a shared machine do not count) of ``python -c`` importing the base modules and then
the library, minus the base alone, the median wall time of the import itself, and the number of
modules the library adds. Bytecode caches are written and used, as in any install. A library not
installed in an interpreter is skipped with one line: give each candidate its own venv with
``--python`` (the figures in plugins/telegram/README.md came from python-telegram-bot 22.8 with
aiolimiter, and aiogram 3.31.0, each in a fresh venv of Python 3.11).

    python bench/telegram_import.py [--runs 9] [--python /tmp/ptb/bin/python --python /tmp/aiogram/bin/python]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

BASE = ("asyncio", "httpx")
CASES = [
    ("httpx (the base's own share)", ("asyncio",), ("httpx",)),
    ("python-telegram-bot: telegram", BASE, ("telegram",)),
    ("python-telegram-bot: + telegram.ext (ExtBot, AIORateLimiter)", BASE, ("telegram", "telegram.ext")),
    (
        "crab-telegram as `crab serve telegram` runs it",
        BASE,
        ("crab_telegram.channel", "crab_telegram.incoming", "telegram.ext"),
    ),
    ("aiogram (aiohttp, pydantic)", BASE, ("aiogram",)),
    ("aiogram: Bot and Dispatcher", BASE, ("aiogram.client.bot", "aiogram.dispatcher.dispatcher")),
]

CHILD = """
import sys, time
for name in sys.argv[1].split(","):
    if name:
        __import__(name)
before = set(sys.modules)
if sys.argv[2]:
    started = time.perf_counter()
    for name in sys.argv[2].split(","):
        __import__(name)
    sys.stderr.write(f"WALL {time.perf_counter() - started}\\n")
sys.stderr.write(f"MODULES {len(set(sys.modules) - before)}\\n")
"""


def run_child(python: str, base: tuple[str, ...], extra: tuple[str, ...]) -> tuple[float, float, int] | None:
    """(child CPU seconds, import wall seconds, modules added), or None when an import failed."""
    proc = subprocess.Popen(
        [python, "-c", CHILD, ",".join(base), ",".join(extra)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        return None
    wall = next((float(line.split()[1]) for line in err.splitlines() if line.startswith("WALL ")), 0.0)
    modules = next(int(line.split()[1]) for line in err.splitlines() if line.startswith("MODULES "))
    return usage.ru_utime + usage.ru_stime, wall, modules


def measure(python: str, runs: int) -> None:
    print(f"\n{python}")
    print(f"{'case':62} {'CPU ms':>8} {'wall ms':>8} {'modules':>8}")
    for label, base, extra in CASES:
        if run_child(python, base, extra) is None:  # warms the bytecode cache too
            print(f"{label:62} {'not installed here':>26}")
            continue
        added_cpu, walls, modules = [], [], 0
        for _ in range(runs):
            alone = run_child(python, base, ())
            both = run_child(python, base, extra)
            assert alone is not None
            assert both is not None
            added_cpu.append(both[0] - alone[0])
            walls.append(both[1])
            modules = both[2]
        print(
            f"{label:62} {statistics.median(added_cpu) * 1000:8.1f} {statistics.median(walls) * 1000:8.1f} {modules:8d}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--python", action="append", help="an interpreter to measure in (repeatable)")
    args = parser.parse_args()
    for python in args.python or [sys.executable]:
        measure(python, args.runs)


if __name__ == "__main__":
    main()
