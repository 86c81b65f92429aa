"""Start-up benchmark: ``crab --version`` and ``crab --help`` beside ``python -c pass``, in one run.

Prints medians, ratios to ``python -c pass`` and the number of modules each command imports, with
every installed first-party plugin enabled. Targets: --version within 3x of python -c pass;
--help under 0.25 s and under 300 modules.

    python bench/startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CRAB = [sys.executable, "-m", "crab"]


def crab_script() -> list[str]:
    """The installed console script when there is one (what users run), else python -m crab."""
    script = Path(sys.executable).with_name("crab")
    return [str(script)] if script.exists() else CRAB


def timed(cmd: list[str], env: dict[str, str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def module_count(args: list[str], env: dict[str, str]) -> int:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *args], env=env, capture_output=True, text=True, check=True
    )
    return sum(1 for line in result.stderr.splitlines() if line.startswith("import time:") and "|" in line) - 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = tempfile.mkdtemp(prefix="crab-bench-")
    plugins = subprocess.run([*CRAB, "plugins", "list", "--json"], env=env, capture_output=True, text=True, check=True)
    import json

    loaded = [p["name"] for p in json.loads(plugins.stdout) if p["status"] == "loaded"]
    print(f"plugins enabled: {', '.join(loaded) or 'none'}")
    script = crab_script()
    cases = [
        ("python -c pass", [sys.executable, "-c", "pass"], ["-c", "pass"]),
        ("crab --version", [*script, "--version"], ["-m", "crab", "--version"]),
        ("crab --help", [*script, "--help"], ["-m", "crab", "--help"]),
        ("crab plugins list", [*script, "plugins", "list"], ["-m", "crab", "plugins", "list"]),
    ]
    for _, cmd, _ in cases:  # warm the file cache
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    rows = []
    for label, cmd, module_args in cases:
        rows.append((label, timed(cmd, env, runs), module_count(module_args, env)))
    base = rows[0][1]
    print(f"{'command':<20} {'median':>9} {'x python':>9} {'modules':>8}")
    for label, seconds, modules in rows:
        print(f"{label:<20} {seconds * 1000:>7.1f}ms {seconds / base:>8.2f}x {modules:>8}")
    version, help_ = rows[1], rows[2]
    print()
    print(f"target --version within 3x of python -c pass: {'met' if version[1] / base <= 3 else 'MISSED'}")
    print(f"target --help under 250 ms: {'met' if help_[1] < 0.25 else 'MISSED'}")
    print(f"target --help under 300 modules: {'met' if help_[2] < 300 else 'MISSED'}")


if __name__ == "__main__":
    main()
