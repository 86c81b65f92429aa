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

Variants, side by side in one run: a baseline ref (``--baseline``, default ``main``, checked out
with ``git worktree add`` into a temporary folder) and a source tree (``--tree``, default this
checkout), each with ``tool_view = "progressive"`` and ``"full"``. crab runs from the variant's
tree (its ``core/src``, ``plugins/*/src`` and ``kits/*/src`` first on ``PYTHONPATH``, ahead of the
venv's editable installs; the files crab, the provider and tools-basic were imported from are
printed and checked). For each provider and session it prints: requests (compaction summaries
included), prompt tokens, billed input (uncached x1, cache writes x1.25 or x2 for 1h, reads
x0.1 at Anthropic, cached x0.5 at OpenAI), billed ÷ the baseline's progressive view (what crab
bills today), the share of each request read from cache from the 2nd request on (mean, min),
how often the tools array and the system prompt changed between requests, the tools array's
tokens in the first request, and compactions. Targets (issue 38): billed ≤ 0.2x today's, and
≥ 90% of every request read from cache after the first, except right after a compaction or a
pause longer than the TTL.

    .venv/bin/python bench/cost.py                              # main beside this checkout, ~3 min
    .venv/bin/python bench/cost.py --baseline HEAD~3 --tree /work/main
    .venv/bin/python bench/cost.py --sessions short --providers anthropic --views progressive
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

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
    """The files crab's core, the Anthropic provider and tools-basic load from in ``tree``'s
    environment; exits when any comes from elsewhere (the baseline would not be the baseline)."""
    code = "import crab, crab_provider_anthropic, crab_tools_basic as t; print(crab.__file__, crab_provider_anthropic.__file__, t.__file__)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=crab_env(tree, Path(tempfile.gettempdir())),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for file in out:
        if not Path(file).resolve().is_relative_to(tree.path.resolve()):
            raise SystemExit(f"cost.py: {file} is not in {tree.path}: crab would not run the {tree.label} tree")
    return out[0]


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
        fake.clock.advance(prompt.pause_before)
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
        "tools": changes([r.tools for r in steps]),
        "system": changes([r.system for r in steps]),
        "first_tools": steps[0].tools_tokens if steps else 0,
        "compactions": sum(1 for r in served if r.kind == "summary"),
        "failure": failure,
    }


def print_table(title: str, rows: list[tuple[str, dict[str, float | str]]], today: float | None) -> None:
    print(title)
    head = f"{'variant':<26}{'requests':>9}{'prompt tok':>12}{'billed in':>12}{'x today':>9}{'read mean':>11}{'read min':>10}{'tools chg':>11}{'system chg':>12}{'tools tok':>11}{'compact':>9}"
    print(head)
    for label, f in rows:
        ratio = f"{float(f['billed']) / today:.2f}" if today else "-"
        print(
            f"{label:<26}{f['requests']:>9}{int(f['prompt']):>12,}{float(f['billed']):>12,.0f}{ratio:>9}"
            f"{float(f['mean']):>11.0%}{float(f['min']):>10.0%}{f['tools']:>11}{f['system']:>12}"
            f"{int(f['first_tools']):>11,}{f['compactions']:>9}"
        )
        if f["failure"]:
            print(f"{'':<26}! {f['failure']}")
    print()


def baseline_tree(repo: Path, ref: str, folder: Path) -> Tree:
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", "--detach", str(folder), ref], check=True)
    return Tree(ref, folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="main", help="git ref of the baseline (default main)")
    parser.add_argument(
        "--tree", type=Path, default=ROOT, help="source tree measured beside it (default this checkout)"
    )
    parser.add_argument("--sessions", default="short,long", help="comma list of short, long")
    parser.add_argument("--providers", default="anthropic,openai", help="comma list of anthropic, openai")
    parser.add_argument("--views", default="progressive,full", help="comma list of progressive, full")
    args = parser.parse_args()
    sessions = [s for s in args.sessions.split(",") if s]
    providers = [p for p in args.providers.split(",") if p]
    views = [v for v in args.views.split(",") if v]
    for name, allowed in ((sessions, SESSIONS), (providers, MODELS), (views, ("progressive", "full"))):
        if not name or any(n not in allowed for n in name):
            raise SystemExit(f"cost.py: choose from {', '.join(allowed)}")
    tree_path = args.tree.resolve()
    branch = subprocess.run(
        ["git", "-C", str(tree_path), "rev-parse", "--abbrev-ref", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="crab-cost-") as tmp:
        scratch = Path(tmp)
        baseline = baseline_tree(tree_path, args.baseline, scratch / "baseline")
        trees = [baseline, Tree(branch or "tree", tree_path)]
        fake = FakeProviders(Script(SHORT))
        try:
            for tree in trees:
                subprocess.run(
                    [sys.executable, "-m", "compileall", "-q", *tree.python_path().split(os.pathsep)],
                    capture_output=True,
                )
                print(f"{tree.label}: crab from {check_tree(tree)}")
            print()
            for provider in providers:
                for session in sessions:
                    prompts, window = SESSIONS[session]
                    rows: list[tuple[str, dict[str, float | str]]] = []
                    for tree in trees:
                        for view in views:
                            outcome = run_session(fake, tree, scratch / "run", provider, view, prompts, window)
                            rows.append((f"{tree.label} {view}", figures(outcome)))
                    today = float(rows[0][1]["billed"]) if rows[0][0].endswith("progressive") else None
                    steps = Script(prompts).requests
                    print_table(
                        f"{provider}, {session} session ({len(prompts)} prompts, {steps} scripted requests)",
                        rows,
                        today,
                    )
        finally:
            fake.close()
            subprocess.run(
                ["git", "-C", str(tree_path), "worktree", "remove", "--force", str(scratch / "baseline")], check=False
            )
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
