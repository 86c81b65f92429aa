"""Start-up benchmark: ``crab --version``, ``crab --help``, ``crab plugins list`` and a whole
``crab run -m mock/tour hi`` beside ``python -c pass``, in one run, for this checkout and (``--baseline REV``) another revision's core.

For each command it prints the median CPU time of the child process (user + system, from
``wait4``, so other processes on a shared machine do not count), the median wall time, the
ratio of CPU time to ``python -c pass``'s, and the number of modules the command imports beyond
what a bare interpreter has loaded (read from ``sys.modules`` in the child, since ``-X
importtime`` does not list packages installed in editable mode). Bytecode caches are written and
used, as in any install. Every installed first-party plugin is enabled. ``--baseline`` runs the
same commands with that revision's ``core/src`` and every plugin's and kit's ``src`` (``git
archive``) first on ``PYTHONPATH`` (this checkout gets its own folders there in the same order, so
both pay the same path search), so before and after sit side by side; a command whose output says
a plugin failed stops the bench (today's plugins on an older core fail on the API they now use, and
a run whose tools were refused costs less, which would read as a regression). Targets: --version within 3x of python
-c pass; --help under 250 ms CPU and at most 150 modules plus one (its top-level module) per
installed plugin; plugins list at most 100 ms CPU.

    python bench/startup.py [--runs 15] [--baseline main]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = [
    ("python -c pass", ["-c", "pass"]),
    ("crab --version", ["-m", "crab", "--version"]),
    ("crab --help", ["-m", "crab", "--help"]),
    ("crab plugins list", ["-m", "crab", "plugins", "list"]),
    ("crab run mock/tour", ["-m", "crab", "run", "-m", "mock/tour", "hi"]),
]
"""The last row is a whole ``crab run`` (crab-provider-mock's packaged tour: three read-only tool
calls and an answer) in an empty folder: what scripts and the end-to-end tests start most."""

EMPTY_FOLDER = tempfile.mkdtemp(prefix="crab-bench-cwd-")
"""Where every command runs: the tour's ls/glob/grep see an empty folder, not the caller's."""

COUNT_MODULES = """
import sys
before = set(sys.modules)
if sys.argv[1:] != ["-c", "pass"]:
    sys.argv = ["crab", *sys.argv[3:]]
    from crab._cli import main
    try:
        main()
    except SystemExit:
        pass
sys.stderr.write("\\nMODULES %d\\n" % len(set(sys.modules) - before))
"""


def run_once(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one ``python ARGS`` child, in ``EMPTY_FOLDER``."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, *args], env=env, cwd=EMPTY_FOLDER, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {process.returncode}")
    return usage.ru_utime + usage.ru_stime, wall


def module_count(args: list[str], env: dict[str, str]) -> int:
    """Modules the command loads beyond a bare interpreter (0 for ``python -c pass``)."""
    result = subprocess.run(
        [sys.executable, "-c", COUNT_MODULES, *args],
        env=env,
        cwd=EMPTY_FOLDER,
        capture_output=True,
        text=True,
        check=True,
    )
    failed = plugin_failures(result.stdout + result.stderr)
    if failed:
        raise SystemExit(f"{' '.join(args)}: a plugin failed, the figures would not compare: {failed[0]}")
    return int(result.stderr.rsplit("\nMODULES ", 1)[1])


def plugin_failures(output: str) -> list[str]:
    """The lines of a command's output that say a plugin failed (``plugin NAME failed: ...``)."""
    return [line.strip() for line in output.splitlines() if re.search(r"\bplugin [\w.-]+ failed:", line)]


def source_folders(root: Path) -> list[Path]:
    """``core/src``, crab-testing's ``testing/src`` (where there is one: before crab-core 0.1
    ``crab.testing`` was in core), and every plugin's and kit's ``src`` under ``root``, in that order."""
    testing = [root / "testing" / "src"] if (root / "testing" / "src").is_dir() else []
    return [root / "core" / "src", *testing, *sorted(root.glob("plugins/*/src")), *sorted(root.glob("kits/*/src"))]


def baseline_tree(revision: str, into: Path) -> list[Path]:
    """The source folders of ``revision`` (core, crab-testing, plugins, kits), extracted from git into ``into``."""
    parts = ["core/src", "plugins", "kits"]
    has_testing = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{revision}:testing"], capture_output=True)
    parts += ["testing"] if has_testing.returncode == 0 else []
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, *parts], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return source_folders(into)


def measure(envs: list[dict[str, str]], runs: int) -> list[list[tuple[str, float, float, int]]]:
    """Per env, (label, median CPU, median wall, modules) per case. Every run goes through all
    cases of all envs in turn, so a change in the machine's load touches each figure alike."""
    for env in envs:
        for _, args in CASES:  # warm the file cache
            run_once(args, env)
    samples: list[dict[str, list[tuple[float, float]]]] = [{label: [] for label, _ in CASES} for _ in envs]
    for _ in range(runs):
        for env, taken in zip(envs, samples, strict=True):
            for label, args in CASES:
                taken[label].append(run_once(args, env))
    return [
        [
            (
                label,
                statistics.median(cpu for cpu, _ in taken[label]),
                statistics.median(wall for _, wall in taken[label]),
                module_count(args, env),
            )
            for label, args in CASES
        ]
        for env, taken in zip(envs, samples, strict=True)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--baseline", help="a git revision whose core to measure beside this checkout's")
    options = parser.parse_args()
    # Bytecode caches as every install has them (pip compiles wheels; an editable install writes
    # them on first import): without, each run would measure compiling crab, not starting it.
    drop = ("CRAB_", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["CRAB_HOME"] = tempfile.mkdtemp(prefix="crab-bench-")
    sys.path.insert(0, str(ROOT / "core" / "src"))
    from crab._host.entry_points import entry_points

    plugins = sorted(ep.name for ep in entry_points("crab"))
    if "provider-mock" not in plugins:
        CASES.pop()  # the run row needs crab-provider-mock's tour
    packages = {ep.value.split(":")[0].split(".")[0] for ep in entry_points("crab")}
    print(f"plugins enabled: {', '.join(plugins) or 'none'}")
    with tempfile.TemporaryDirectory(prefix="crab-baseline-") as folder:
        titles, envs = ["this checkout"], [env]
        if options.baseline:
            titles.insert(0, options.baseline)
            folders = baseline_tree(options.baseline, Path(folder))
            envs.insert(0, dict(env, PYTHONPATH=os.pathsep.join(map(str, folders))))
            envs[1] = dict(env, PYTHONPATH=os.pathsep.join(map(str, source_folders(ROOT))))
        columns = list(zip(titles, measure(envs, options.runs), strict=True))
    for title, rows in columns:
        base = rows[0][1]
        print(f"\n{title}:")
        print(f"{'command':<20} {'CPU':>9} {'wall':>9} {'CPU x python':>13} {'modules':>8}")
        for label, cpu, wall, modules in rows:
            print(f"{label:<20} {cpu * 1000:>7.1f}ms {wall * 1000:>7.1f}ms {cpu / base:>12.2f}x {modules:>8}")
    if len(columns) == 2:
        print(f"\n{'after / before':<20} {'CPU':>9} {'modules':>9}")
        for (label, cpu0, _, mods0), (_, cpu1, _, mods1) in zip(columns[0][1], columns[1][1], strict=True):
            if label != "python -c pass":
                print(f"{label:<20} {cpu1 / cpu0:>8.2f}x {mods1 - mods0:>+9}")
    rows = columns[-1][1]
    base, version, help_, listing = rows[:4]
    budget = 150 + len(packages)
    print()
    print(f"target --version within 3x of python -c pass (CPU): {'met' if version[1] / base[1] <= 3 else 'MISSED'}")
    print(f"target --help under 250 ms CPU: {'met' if help_[1] < 0.25 else 'MISSED'}")
    print(f"target --help at most {budget} modules (150 + one per plugin): {'met' if help_[3] <= budget else 'MISSED'}")
    print(f"target plugins list at most 100 ms CPU: {'met' if listing[1] <= 0.1 else 'MISSED'}")


if __name__ == "__main__":
    main()
