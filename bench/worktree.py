"""Worktree benchmark: what ``crab --worktree`` costs on a repository of 20,000 files.

A git repository of ``--files`` files (default 20,000: 200 folders of 100 small Python files, one
commit) is made in a temporary folder. Then, ``--runs`` times each (median and range printed):

- ``create``: crab-worktree's ``worktrees.create`` (``git worktree add`` of a new branch from
  HEAD: the checkout of every file) — the time a ``--worktree`` run waits before its agent exists;
- ``leave``: ``worktrees.leave`` of that unchanged worktree (``git status`` of it, then ``git
  worktree remove`` and the branch deleted);
- the CPU time git's processes used per create and leave (what does not depend on a busy disk or
  on other processes, as the wall time does);
- ``crab run``, ``crab run --worktree``: the real command end to end (crab-provider-mock's packaged
  tour, the worktree made and removed), so the difference is what the flag adds to a run.

    .venv/bin/python bench/worktree.py [--files 20000] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crab_worktree.worktrees import create, leave

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def make_repository(root: Path, files: int) -> None:
    per_folder = 100
    for number in range(files):
        folder = root / "pkg" / f"mod{number // per_folder:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file{number % per_folder:03d}.py").write_text(f"VALUE = {number}\n\n\ndef f():\n    return VALUE\n")
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(samples: list[float], started: float) -> None:
    samples.append(time.perf_counter() - started)


def show(label: str, samples: list[float]) -> None:
    each = ", ".join(f"{s:.2f}" for s in samples)
    print(f"{label:<28}{statistics.median(samples):>9.3f} s   (each: {each})")


def crab_run(root: Path, home: Path, *flags: str) -> None:
    env = {**os.environ, **GIT_ENV, "CRAB_HOME": str(home), "CRAB_PLUGINS": "provider-mock,worktree"}
    done = subprocess.run(
        [sys.executable, "-m", "crab", "run", "-m", "mock/tour", *flags, "hello"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"crab run {' '.join(flags)} failed: {done.stderr.strip().splitlines()[-1:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crab-worktree-bench-") as tmp:
        root, home = Path(tmp) / "repo", Path(tmp) / "home"
        root.mkdir()
        home.mkdir()
        started = time.perf_counter()
        make_repository(root, args.files)
        print(f"repository of {args.files:,} files made in {time.perf_counter() - started:.1f} s ({root})")
        created: list[float] = []
        left: list[float] = []
        cpu = children_cpu()
        for number in range(args.runs):
            started = time.perf_counter()
            tree, _ = create(root, f"bench{number}", ".crab/worktrees", "crab/")
            timed(created, started)
            started = time.perf_counter()
            said = leave(tree)
            timed(left, started)
            assert said.endswith("no changes"), said
        git_cpu = (children_cpu() - cpu) / args.runs
        plain: list[float] = []
        isolated: list[float] = []
        for _ in range(args.runs):
            started = time.perf_counter()
            crab_run(root, home)
            timed(plain, started)
            started = time.perf_counter()
            crab_run(root, home, "--worktree")
            timed(isolated, started)
        print(f"median of {args.runs} runs:")
        show("create (git worktree add)", created)
        show("leave (unchanged: removed)", left)
        show("crab run", plain)
        show("crab run --worktree", isolated)
        print(f"CPU of git's processes per create + leave: {git_cpu:.3f} s (wall time above includes waiting)")
        print(f"--worktree adds {statistics.median(isolated) - statistics.median(plain):.3f} s to a run")


if __name__ == "__main__":
    main()
