"""MCP start-up benchmark: three configured stdio servers on ``crab run`` start in parallel.

Runs ``crab run`` (provider-mock, one scripted text reply) with no server, with each of three
stdio servers alone (the tests' tiny server, made to take 1, 2 and 3 s to boot), and with all
three; prints the medians, the extra time each costs over no server, the sum and the slowest of
those, and where all three land between them (near the slowest = parallel; near the sum =
one after another). Then a server that never answers ``initialize`` (``connect_timeout = 2``):
its extra time should be the 2 s and no shutdown grace on top. Then the same server with the
default ``connect_timeout`` (20 s): start-up goes on after ``startup_wait`` (5 s) and the server
is ended at once when the run ends, so its extra time should be about 5 s. Then checks that ``crab --help`` with the three configured starts none of
them and imports no ``mcp`` module.

    python bench/mcp_startup.py [--runs 3]

Needs crab-mcp and crab-provider-mock installed (requirements-dev.txt).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "plugins" / "mcp" / "tests" / "mcp_tiny_server.py"
DELAYS = (1.0, 2.0, 3.0)


def server_table(name: str, delay: float, marker: Path) -> str:
    args = [str(TINY), "--sleep", str(delay), "--marker", str(marker)]
    return f"[plugins.mcp.servers.{name}]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n"


HANG_TIMEOUT = 2.0


def setup(home: Path, servers: list[tuple[str, float]], extra: str = "") -> None:
    text = "".join(server_table(name, delay, home / f"started-{name}") for name, delay in servers)
    (home / "config.toml").write_text(text + extra)


def hanging_table(connect_timeout: float | None = HANG_TIMEOUT) -> str:
    args = [str(TINY), "--mute"]
    table = f"[plugins.mcp.servers.hang]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n"
    return table + (f"connect_timeout = {connect_timeout}\n" if connect_timeout is not None else "")


def crab_run(home: Path, work: Path, script: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env["CRAB_HOME"] = str(home)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "crab", "run", "-m", f"mock/{script}", "hello"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"crab run failed: {done.stderr.strip()[-500:]}")
    return elapsed


def median_run(
    home: Path, work: Path, script: Path, servers: list[tuple[str, float]], runs: int, extra: str = ""
) -> float:
    setup(home, servers, extra)
    return statistics.median(crab_run(home, work, script) for _ in range(runs))


HELP_PROBE = """
import sys, runpy
sys.argv = ["crab", "--help"]
try:
    runpy.run_module("crab", run_name="__main__")
except SystemExit:
    pass
loaded = sorted(m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "mcp_types", "crab_mcp.")))
sys.stderr.write("\\nLOADED " + " ".join(loaded) + "\\n")
"""


def help_check(home: Path, work: Path) -> tuple[float, list[str], list[str]]:
    setup(home, [(f"s{i}", d) for i, d in enumerate(DELAYS)])
    for marker in home.glob("started-*"):
        marker.unlink()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(home)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", HELP_PROBE], cwd=work, env=env, capture_output=True, text=True, timeout=60
    )
    elapsed = time.perf_counter() - start
    loaded = done.stderr.rsplit("\nLOADED ", 1)[-1].split()
    started = sorted(p.name for p in home.glob("started-*"))
    return elapsed, loaded, started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        home, work = Path(tmp) / "home", Path(tmp) / "work"
        home.mkdir()
        work.mkdir()
        script = Path(tmp) / "reply.json"
        script.write_text(json.dumps([[{"text": "hi"}]]))
        base = median_run(home, work, script, [], runs)
        alone = {f"s{i}": median_run(home, work, script, [(f"s{i}", d)], runs) - base for i, d in enumerate(DELAYS)}
        together = median_run(home, work, script, [(f"s{i}", d) for i, d in enumerate(DELAYS)], runs) - base
        total, slowest = sum(alone.values()), max(alone.values())
        print(f"crab run, median of {runs}; extra seconds over crab run with no MCP server ({base:.2f} s):")
        for (name, extra), delay in zip(alone.items(), DELAYS, strict=True):
            print(f"  {name} alone (boots in {delay:g} s)   {extra:6.2f} s")
        print(f"  sum of the three            {total:6.2f} s")
        print(f"  slowest one                 {slowest:6.2f} s")
        print(
            f"  all three configured        {together:6.2f} s   ({together / slowest:.2f}x slowest, {together / total:.2f}x sum)"
        )
        hang = median_run(home, work, script, [], runs, hanging_table()) - base
        print(
            f"  a server that never answers {hang:6.2f} s   (connect_timeout {HANG_TIMEOUT:g} s; "
            f"{hang - HANG_TIMEOUT:+.2f} s over it)"
        )
        slow = median_run(home, work, script, [], runs, hanging_table(None)) - base
        print(f"  the same, default connect_timeout (20 s) {slow:6.2f} s   (start-up goes on after startup_wait)")
        elapsed, loaded, started = help_check(home, work)
        print(
            f"crab --help with three servers configured: {elapsed:.2f} s, servers started: {started or 'none'}, "
            f"mcp modules imported: {loaded or 'none'}"
        )
        if loaded or started:
            raise SystemExit("crab --help must start no server and import no mcp module")


if __name__ == "__main__":
    main()
