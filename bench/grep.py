"""Benchmark: crab's grep tool against GNU ``grep -rn`` on a copy of the Python standard library.

Run as ``.venv/bin/python bench/grep.py [--repeat N] [--corpus DIR]``. Both run in this one
process on the same tree, side by side, and the figures that matter are the ratios (tool time
over grep time; the target is 2x or less): absolute times depend on the machine. Each back-end
of the tool is measured: ripgrep (the binary of the ``ripgrep`` wheel tools-basic depends on)
and Python's ``re`` in its killable worker process. The look-ahead case is one ripgrep refuses:
there both back-ends use the worker (and GNU grep needs ``-P``).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

from crab_tools_basic.grep_engine import find_rg
from crab_tools_basic.search import search
from crab_tools_basic.workspace import Workspace

HERE = Path(__file__).resolve().parent
DEFAULT_CORPUS = HERE / ".data" / "stdlib"
TARGET = 2.0
# (label, pattern, ignore case): a common word, a rare literal, a regex, a case-insensitive word.
CASES = [
    ("common literal", "import", False),
    ("rare literal", "frozenset(", False),
    ("regex", r"def \w+_\w+\(self", False),
    ("ignore case", "deprecated", True),
    ("look-ahead", r"def \w+(?=\(self)", False),
]


def build_corpus(target: Path) -> Path:
    """Copy the standard library (no site-packages, no bytecode) once; later runs reuse it."""
    if target.exists():
        return target
    source = Path(sysconfig.get_paths()["stdlib"])
    skip = shutil.ignore_patterns("site-packages", "__pycache__", "*.pyc", "config-*", "lib-dynload")
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(source, partial, ignore=skip, symlinks=True)
    partial.rename(target)
    return target


def timed(run: Callable[[], object], repeat: int) -> float:
    """The median wall time of ``repeat`` runs after one warm-up (so both read a warm page cache)."""
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def gnu_grep(corpus: Path, pattern: str, ignore_case: bool) -> Callable[[], object]:
    # Output goes to a pipe: with stdout on /dev/null GNU grep stops at the first match.
    mode = "-F" if pattern.endswith("(") else "-P" if "(?=" in pattern else "-E"
    args = ["grep", "-rn", *(["-i"] if ignore_case else []), mode, pattern, "."]
    return lambda: subprocess.run(args, cwd=corpus, capture_output=True, check=False)


def tool(corpus: Path, pattern: str, ignore_case: bool, backend: str) -> Callable[[], object]:
    ws = Workspace(corpus)
    regex = pattern.replace("(", r"\(") if pattern.endswith("(") else pattern
    return lambda: search(ws, regex, ignore_case=ignore_case, backend=backend)  # type: ignore[arg-type]


def version(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError:
        return "not installed"
    return done.stdout.splitlines()[0] if done.stdout else "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per measurement (median kept)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="tree to search")
    options = parser.parse_args()
    if shutil.which("grep") is None:
        print("GNU grep is not on PATH: nothing to compare against", file=sys.stderr)
        return 2
    corpus = build_corpus(options.corpus.resolve())
    files = sum(1 for p in corpus.rglob("*") if p.is_file())
    size = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file())
    rg = find_rg()
    backends = ["rg", "python"] if rg else ["python"]
    print(f"corpus: {corpus} ({files} files, {size / 1e6:.1f} MB); median of {options.repeat} runs each")
    print(f"grep: {version(['grep', '--version'])}; rg: {version([rg, '--version']) if rg else 'not found'} ({rg})")
    print(f"backends measured: {', '.join(backends)} (python = re in the worker process)")
    header = f"{'case':<16} {'matches':>8} {'grep -rn':>10}" + "".join(f" {b:>9} {'ratio':>6}" for b in backends)
    print(header)
    print("-" * len(header))
    worst: dict[str, float] = dict.fromkeys(backends, 0.0)
    for label, pattern, ignore_case in CASES:
        grep_run = gnu_grep(corpus, pattern, ignore_case)
        matches = grep_run().stdout.count(b"\n")  # type: ignore[attr-defined]
        baseline = timed(grep_run, options.repeat)
        row = f"{label:<16} {matches:>8} {baseline * 1000:>8.0f}ms"
        for backend in backends:
            seconds = timed(tool(corpus, pattern, ignore_case, backend), options.repeat)
            ratio = seconds / baseline
            worst[backend] = max(worst[backend], ratio)
            row += f" {seconds * 1000:>7.0f}ms {ratio:>5.2f}x"
        print(row)
    for backend in backends:
        verdict = "met" if worst[backend] <= TARGET else "missed"
        print(f"{backend}: worst ratio {worst[backend]:.2f}x; target {TARGET:.1f}x {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
