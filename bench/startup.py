"""Start-up benchmark: ``crab --version`` and ``crab --help`` beside ``python -c pass``, in one run.

Prints medians, ratios to ``python -c pass`` and the number of modules each command imports
beyond what a bare interpreter has loaded (read from ``sys.modules`` in the child, since
``-X importtime`` does not list packages installed in editable mode), with every installed
first-party plugin enabled. Targets: --version within 3x of python -c pass; --help under 0.25 s
and at most 144 modules plus one (its top-level module) per installed plugin.

    python bench/startup.py [--runs 15]
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


COUNT_MODULES = """
import sys
before = set(sys.modules)
if sys.argv[1:] != ["-c", "pass"]:
    sys.argv = ["crab", *sys.argv[1:]]
    from crab._cli import main
    try:
        main()
    except SystemExit:
        pass
sys.stderr.write("\\nMODULES %d\\n" % len(set(sys.modules) - before))
"""


def module_count(args: list[str], env: dict[str, str]) -> int:
    """Modules ``crab ARGS`` loads beyond a bare interpreter (0 for ``python -c pass``).

    Read from ``sys.modules`` in the child, which imports nothing of its own.
    """
    result = subprocess.run(
        [sys.executable, "-c", COUNT_MODULES, *args], env=env, capture_output=True, text=True, check=True
    )
    return int(result.stderr.rsplit("\nMODULES ", 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = tempfile.mkdtemp(prefix="crab-bench-")
    plugins = subprocess.run([*CRAB, "plugins", "list", "--json"], env=env, capture_output=True, text=True, check=True)
    loaded = [p["name"] for p in json.loads(plugins.stdout) if p["status"] == "loaded"]
    print(f"plugins enabled: {', '.join(loaded) or 'none'}")
    script = crab_script()
    cases = [
        ("python -c pass", [sys.executable, "-c", "pass"], ["-c", "pass"]),
        ("crab --version", [*script, "--version"], ["--version"]),
        ("crab --help", [*script, "--help"], ["--help"]),
        ("crab plugins list", [*script, "plugins", "list"], ["plugins", "list"]),
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
    from importlib.metadata import entry_points

    budget = 144 + len({ep.value.split(":")[0].split(".")[0] for ep in entry_points(group="crab")})
    print(f"target --help at most {budget} modules (144 + one per plugin): {'met' if help_[2] <= budget else 'MISSED'}")


if __name__ == "__main__":
    main()
