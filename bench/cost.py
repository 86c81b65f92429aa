"""Cost benchmark (issue 38): what a scripted coding session bills, through the real ``crab run``
and ``crab run -c``, against fake Anthropic and OpenAI endpoints that bill by the published
prompt-cache rules (``bench/_cost/billing.py`` says which rules and how tokens are counted).

Two sessions on a small real Python project (``bench/_cost/project.py``), the real tools-basic
tools running: ``short``, three prompts (find a failing test's cause, fix it, add a test: 18
requests); ``long``, ten prompts (64 requests) with a 6-minute pause on the fake clock before the
sixth and a context window small enough for compaction. Each prompt is its own ``crab run`` (the
first) or ``crab run -c`` process, with a fresh ``CRAB_HOME`` and workspace per variant; the
fake replies are chosen from each request alone (``bench/_cost/script.py``), so a new process
continues the script.

Variants, side by side in one run: a baseline ref (``--baseline``, default ``main``, its files
taken with ``git archive`` into a temporary folder) and a source tree (``--tree``, default this
checkout, uncommitted changes included), each with ``tool_view = "progressive"`` and ``"full"``.
crab runs from the variant's tree: its ``core/src``, ``plugins/*/src`` and ``kits/*/src`` first on
``PYTHONPATH``, ahead of the venv's editable installs (the venv gives the entry points and the
third-party packages); the file crab was imported from is printed, and the run stops when crab,
the Anthropic provider or tools-basic would come from anywhere else. Plugins loaded:
``PLUGINS``; the model: ``MODELS``; the long session sets ``[crab] context_window`` (``SESSIONS``).

For each provider and session it prints one row per variant (the legend is printed above the
tables): requests (compaction summaries included), prompt tokens, billed input, billed ÷ the
baseline's progressive view (what crab bills today), the share of each request read from cache
from the 2nd request on (mean, min, and min* without the first request after a compaction or the
pause), how often the tools array and the system prompt changed from one request to the next,
the first request's tools array in tokens, and compactions. A row that went wrong says so under
it (a crab run that failed, a request the script has no place for, a 400 from the fake).
Targets (issue 38): billed ≤ 0.2x today's; min* ≥ 90%.

Sessions run two at a time (``--jobs``), each with its own fake and folders. The whole default
run is 32 sessions and about 100 s of CPU: 1.5 minutes on 2 cores, 3 when other work shares them.
Run it with the venv of the checkout it sits in (the entry points and third-party packages come
from there):

    .venv/bin/python bench/cost.py                                    # main beside this checkout
    .venv/bin/python bench/cost.py --baseline 0f4062f --tree /work/main
                                        # main before issue 38's work beside main after the merge
    .venv/bin/python bench/cost.py --sessions short --providers anthropic --views full   # 10 s
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import itertools
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

BENCH = Path(__file__).resolve().parent
# bench/ is sys.path[0] when this file runs, and bench/http.py would shadow the standard library's http.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH]
_spec = importlib.util.spec_from_file_location(
    "_cost", BENCH / "_cost" / "__init__.py", submodule_search_locations=[str(BENCH / "_cost")]
)
assert _spec is not None
assert _spec.loader is not None
sys.modules["_cost"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sys.modules["_cost"])

from _cost.project import write_project  # noqa: E402
from _cost.script import LONG, SHORT, Prompt, Script  # noqa: E402
from _cost.server import FakeProviders, Record  # noqa: E402

ROOT = BENCH.parent
MODELS = {"anthropic": "anthropic/claude-sonnet-4-5", "openai": "openai/gpt-4.1"}
PLUGINS = "provider-anthropic,provider-openai,tools-basic,store-sqlite"
"""The plugins loaded: both providers, the coding tools, and a store so ``-c`` finds the session."""
SESSIONS: dict[str, tuple[list[Prompt], int | None]] = {"short": (SHORT, None), "long": (LONG, 12_500)}
"""Each session's prompts and ``[crab] context_window`` (None: the model's)."""
RUN_TIMEOUT = 180.0
LEGEND = """\
billed in: uncached x1 + cache writes x1.25 (1h: x2) + cache reads x0.1 (OpenAI: cached x0.5), by the fake's counter
x today: billed in / the baseline's progressive view (what crab bills today; issue 38's target: <= 0.2)
read mean, read min: share of each request read from cache, from the 2nd request on (target: >= 90%)
min*: read min without the first request after a compaction or after the 6-minute pause
tools chg, system chg: requests whose tools array / system prompt differ from the request before (markers aside)
tools tok: the tools array of the first request; compact: compaction summary requests
"""
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


@dataclass(frozen=True)
class Tree:
    label: str
    path: Path

    def python_path(self) -> str:
        parts = [self.path / "core" / "src"]
        parts += sorted(self.path.glob("plugins/*/src")) + sorted(self.path.glob("kits/*/src"))
        return os.pathsep.join(str(p) for p in parts)


@dataclass(frozen=True)
class Outcome:
    """One session of one variant: the fake's records, and what went wrong (if anything)."""

    records: list[Record]
    steps: int
    failure: str = ""


def crab_env(tree: Tree, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({"CRAB_HOME": str(home), "NO_COLOR": "1", "PYTHONPATH": tree.python_path(), "TZ": "UTC", **GIT_ENV})
    return env


def check_tree(tree: Tree) -> str:
    """The file crab is imported from in ``tree``'s environment; exits when crab, a loaded plugin or
    the provider kit would come from anywhere else (the baseline would not be the baseline)."""
    modules = ["crab", "crab_provider_kit", *(f"crab_{name.replace('-', '_')}" for name in PLUGINS.split(","))]
    code = f"import importlib; print(*(importlib.import_module(m).__file__ for m in {modules!r}))"
    done = subprocess.run(
        [sys.executable, "-c", code], env=crab_env(tree, Path(tempfile.gettempdir())), capture_output=True, text=True
    )
    if done.returncode != 0:
        fail(f"crab does not import from {tree.path}: {' '.join(done.stderr.strip().splitlines()[-1:])}")
    files = done.stdout.split()
    for file in files:
        if not Path(file).resolve().is_relative_to(tree.path.resolve()):
            fail(f"{file} is not in {tree.path}: crab would not run the {tree.label} tree")
    return files[0]


def write_config(home: Path, url: str, view: str) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text(
        f'[crab]\ntool_view = "{view}"\n\n'
        f'[plugins.provider-anthropic]\nbase_url = "{url}"\nmax_retries = 0\n\n'
        f'[plugins.provider-openai]\nbase_url = "{url}"\nmax_retries = 0\n'
    )


def make_workspace(folder: Path) -> None:
    """The project in ``folder``, committed to a fresh git repository (fixed names and dates)."""
    folder.mkdir(parents=True)
    write_project(folder)
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "calc"]):
        subprocess.run(["git", *args], cwd=folder, env=env, check=True, capture_output=True)


def run_session(
    fake: FakeProviders, tree: Tree, scratch: Path, provider: str, view: str, prompts: list[Prompt], window: int | None
) -> Outcome:
    """Every prompt of one session through ``crab run`` (then ``-c``) against the fake."""
    script = Script(prompts)
    fake.reset(script)
    home, workspace = scratch / "home", scratch / "workspace"  # the same paths for every variant
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(workspace, ignore_errors=True)
    write_config(home, fake.url, view)
    make_workspace(workspace)
    env = crab_env(tree, home)
    for number, prompt in enumerate(prompts):
        fake.pause(prompt.pause_before)
        command = [sys.executable, "-m", "crab", "run", "--plugins", PLUGINS, "-m", MODELS[provider], "--yolo"]
        if window:
            command += ["--set", f"crab.context_window={window}"]
        if number:
            command.append("-c")
        done = subprocess.run(
            [*command, prompt.text], cwd=workspace, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT
        )
        if done.returncode != 0:
            tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["(no output)"]
            return Outcome(
                list(fake.records), script.requests, f"prompt {number + 1} exited {done.returncode}: {tail[0]}"
            )
    return Outcome(list(fake.records), script.requests)


def changes(values: list[str]) -> int:
    return sum(1 for a, b in itertools.pairwise(values) if a != b)


def figures(outcome: Outcome) -> dict[str, float | str]:
    served = [r for r in outcome.records if r.kind != "rejected"]
    steps = [r for r in served if r.kind == "step"]
    shares = [r.bill.read_share for r in served[1:]]
    failure = outcome.failure or next((r.detail for r in outcome.records if r.kind == "rejected"), "")
    if not failure and len(steps) != outcome.steps:
        failure = f"{len(steps)} of the script's {outcome.steps} steps were asked for"
    return {
        "requests": len(served),
        "prompt": sum(r.bill.prompt for r in served),
        "billed": sum(r.bill.billed for r in served),
        "mean": statistics.fmean(shares) if shares else 0.0,
        "min": min(shares) if shares else 0.0,
        "min*": min((r.bill.read_share for r in served[1:] if not r.expected_miss), default=0.0),
        "tools": changes([r.tools for r in steps]),
        "system": changes([r.system for r in steps]),
        "first_tools": steps[0].tools_tokens if steps else 0,
        "compactions": sum(1 for r in served if r.kind == "summary"),
        "failure": failure,
    }


def print_table(title: str, rows: list[tuple[str, dict[str, float | str]]], today: float | None) -> None:
    print(title)
    head = f"{'variant':<38}{'requests':>9}{'prompt tok':>12}{'billed in':>12}{'x today':>9}{'read mean':>11}{'read min':>10}{'min*':>7}{'tools chg':>11}{'system chg':>12}{'tools tok':>11}{'compact':>9}"
    print(head)
    for label, f in rows:
        ratio = f"{float(f['billed']) / today:.2f}" if today else "-"
        print(
            f"{label:<38}{f['requests']:>9}{int(f['prompt']):>12,}{float(f['billed']):>12,.0f}{ratio:>9}"
            f"{float(f['mean']):>11.0%}{float(f['min']):>10.0%}{float(f['min*']):>7.0%}{f['tools']:>11}{f['system']:>12}"
            f"{int(f['first_tools']):>11,}{f['compactions']:>9}"
        )
        if f["failure"]:
            print(f"{'':<38}! {f['failure']}")
    print()


def fail(message: str) -> NoReturn:
    """One line on stderr, exit 2 (a ref, a tree or an option that cannot be used)."""
    print(f"cost.py: {message}", file=sys.stderr)
    raise SystemExit(2)


def git(tree: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"git {' '.join(args)} failed in {tree}: {' '.join(done.stderr.strip().splitlines()[-1:])}")
    return done.stdout.strip()


def baseline_tree(repo: Path, ref: str, folder: Path) -> Tree:
    """``ref``'s files (``git archive``) in ``folder``: nothing registered in the repository."""
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", ref], capture_output=True)
    if archive.returncode != 0:
        fail(f"no git ref {ref!r} in {repo} ({archive.stderr.decode(errors='replace').strip()})")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    short = git(repo, "rev-parse", "--short", ref)
    return Tree(ref if short.startswith(ref) or ref.startswith(short) else f"{ref} {short}", folder)


@dataclass(frozen=True)
class Job:
    provider: str
    session: str
    tree: Tree
    view: str


def run_jobs(jobs: list[Job], workers: int, scratch: Path) -> dict[Job, dict[str, float | str]]:
    """Every job's figures, ``workers`` sessions at a time, each worker with its own fake and its
    own folders (``run0``, ``run1``…: paths of one length, so every variant counts the same tokens)."""
    slots: queue.Queue[tuple[FakeProviders, Path]] = queue.Queue()
    fakes = [FakeProviders(Script(SHORT)) for _ in range(workers)]
    for number, fake in enumerate(fakes):
        slots.put((fake, scratch / f"run{number}"))

    def one(job: Job) -> dict[str, float | str]:
        fake, folder = slots.get()
        try:
            prompts, window = SESSIONS[job.session]
            return figures(run_session(fake, job.tree, folder, job.provider, job.view, prompts, window))
        finally:
            slots.put((fake, folder))

    try:
        with ThreadPoolExecutor(workers) as pool:
            return dict(zip(jobs, pool.map(one, jobs), strict=True))
    finally:
        for fake in fakes:
            fake.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="main", help="git ref of the baseline (default main)")
    parser.add_argument("--tree", type=Path, default=ROOT, help="source tree beside it (default this checkout)")
    parser.add_argument("--sessions", default="short,long", help="comma list of short, long")
    parser.add_argument("--providers", default="anthropic,openai", help="comma list of anthropic, openai")
    parser.add_argument("--views", default="progressive,full", help="comma list of progressive, full")
    parser.add_argument("--jobs", type=int, default=2, help="sessions run at the same time (default 2)")
    args = parser.parse_args()
    sessions = [s for s in args.sessions.split(",") if s]
    providers = [p for p in args.providers.split(",") if p]
    views = [v for v in args.views.split(",") if v]
    for names, allowed in ((sessions, SESSIONS), (providers, MODELS), (views, ("progressive", "full"))):
        if not names or any(n not in allowed for n in names):
            parser.error(f"choose from {', '.join(allowed)}")
    if args.jobs < 1:
        parser.error("--jobs is at least 1")
    tree_path = args.tree.resolve()
    label = (
        git(tree_path, "rev-parse", "--abbrev-ref", "HEAD") + " " + git(tree_path, "describe", "--always", "--dirty")
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="crab-cost-") as tmp:
        scratch = Path(tmp)
        trees = [baseline_tree(tree_path, args.baseline, scratch / "baseline"), Tree(label, tree_path)]
        for tree in trees:
            # Compiled once here, as an install would be, instead of in every crab process.
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", *tree.python_path().split(os.pathsep)], capture_output=True
            )
            print(f"{tree.label}: crab from {check_tree(tree)}")
        print()
        print(LEGEND)
        jobs = [Job(p, s, t, v) for p in providers for s in sessions for t in trees for v in views]
        results = run_jobs(jobs, args.jobs, scratch)
    for provider in providers:
        for session in sessions:
            rows = [
                (f"{j.tree.label} {j.view}", results[j]) for j in jobs if (j.provider, j.session) == (provider, session)
            ]
            today = float(rows[0][1]["billed"]) if rows[0][0].endswith("progressive") else None
            prompts = SESSIONS[session][0]
            title = (
                f"{provider}, {session} session ({len(prompts)} prompts, {Script(prompts).requests} scripted requests)"
            )
            print_table(title, rows, today)
    print(f"{time.perf_counter() - started:.0f} s wall, {args.jobs} sessions at a time")


if __name__ == "__main__":
    main()
