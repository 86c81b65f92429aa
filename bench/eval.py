"""crab eval: the harness's overhead per task run against a bare ``crab run`` of the same task, in one run.

Side by side, CPU time of this process's children (``resource.getrusage(RUSAGE_CHILDREN)``, so
every ``crab`` process and what it started counts), per task run of the starter task
``failing-test`` on its scripted solution (mock provider, real tools):
- bare: its fixture copied into a fresh folder and one ``crab run -m mock/solution.json --yolo``;
- eval: ``crab eval starter --scripted --task failing-test -n RUNS -j 1`` (copy, ``crab run``,
  the check command, the record and the report), divided by RUNS.
Printed figures, never asserted: the difference is what judging and bookkeeping cost a run.

    python bench/eval.py [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STARTER = Path(__file__).resolve().parents[1] / "plugins" / "eval" / "src" / "crab_eval" / "starter"
TASK = STARTER / "failing-test"
PROMPT = "The unit test in calc_check.py fails. Fix calc.py so it passes; do not change the test."
PLUGINS = "eval,provider-mock,tools-basic"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def crab(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", "crab", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"crab {' '.join(args[:3])} failed: {done.stderr.strip()[-300:]}")


def bare(runs: int, root: Path, env: dict[str, str]) -> tuple[float, float]:
    cpu, wall = children_cpu(), time.perf_counter()
    for n in range(runs):
        work = root / f"bare-{n}"
        shutil.copytree(TASK / "fixture", work)
        crab(
            ["run", "-m", f"mock/{TASK / 'solution.json'}", "--yolo", "--store", "memory", "-o", "jsonl", PROMPT],
            work,
            env,
        )
    return (children_cpu() - cpu) / runs, (time.perf_counter() - wall) / runs


def harness(runs: int, root: Path, env: dict[str, str]) -> tuple[float, float]:
    cpu, wall = children_cpu(), time.perf_counter()
    args = ["eval", "starter", "--scripted", "--task", "failing-test", "-n", str(runs), "-j", "1"]
    crab([*args, "--store", "memory", "--out", str(root / "out")], root, env)
    return (children_cpu() - cpu) / runs, (time.perf_counter() - wall) / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="crab-bench-eval-") as folder:
        root = Path(folder)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
        env.update(CRAB_HOME=str(root / "home"), CRAB_PLUGINS=PLUGINS)
        (root / "warm").mkdir()
        bare(1, root / "warm", env)  # the first start fills the bytecode caches
        bare_cpu, bare_wall = bare(runs, root, env)
        eval_cpu, eval_wall = harness(runs, root, env)
    print(f"per task run, {runs} runs each (CPU of every child process; wall time beside it)")
    print(f"  bare crab run : {bare_cpu * 1000:8.1f} ms CPU  {bare_wall * 1000:8.1f} ms wall")
    print(f"  crab eval     : {eval_cpu * 1000:8.1f} ms CPU  {eval_wall * 1000:8.1f} ms wall")
    print(f"  ratio {eval_cpu / bare_cpu:.2f}x CPU; overhead {(eval_cpu - bare_cpu) * 1000:.1f} ms CPU per run")


if __name__ == "__main__":
    main()
