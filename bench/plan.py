"""Plan-mode cost benchmark: what plan mode adds to the bill, in bench/cost.py's terms.

bench/cost.py's short session (three prompts on a small real Python project, the real
tools-basic tools, 18 scripted requests) through the real ``crab run`` and ``crab run -c``
against its fake Anthropic endpoint, which bills by the published prompt-cache rules
(``bench/_cost/billing.py``). Four variants of this checkout, progressive tool view:

- ``without crab-plan``: as cost.py runs it (``--yolo``);
- ``crab-plan, plan mode off``: crab-plan loaded, every prompt ``--yolo``;
- ``crab-plan, 1st prompt --read-only``: the first prompt with ``--read-only`` (its ``bash`` call
  refused), the next two with ``-c --yolo``: what refusing costs without plan mode;
- ``crab-plan, 1st prompt --plan``: the first prompt ("find the cause … do not change anything
  yet") runs with ``--plan`` (its ``bash`` call is refused, a note says plan mode is on), the
  next two with ``-c --yolo`` (a note says plan mode is over).

The figure that matters is ``tools chg`` and ``system chg``: 0 means entering and leaving plan mode
never changed the prompt-cache prefix, so plan mode costs only its two notes over read-only's
refusals (the billed difference between the last two rows); the first two rows differ by
``present_plan``'s line in the tools array (the progressive view's one line of it). Run it with this checkout's venv (a minute or so on 2 cores):

    .venv/bin/python bench/plan.py
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH]  # bench/http.py shadows http
_spec = importlib.util.spec_from_file_location("crab_bench_cost", BENCH / "cost.py")
assert _spec is not None
assert _spec.loader is not None
cost = importlib.util.module_from_spec(_spec)
sys.modules["crab_bench_cost"] = cost  # its dataclasses look their module up there
_spec.loader.exec_module(cost)

VARIANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "without crab-plan": (cost.PLUGINS, ()),
    "crab-plan, plan mode off": (cost.PLUGINS + ",plan", ()),
    "crab-plan, 1st prompt --read-only": (cost.PLUGINS + ",plan", ("--read-only",)),
    "crab-plan, 1st prompt --plan": (cost.PLUGINS + ",plan", ("--plan",)),
}
"""Each variant's plugins and the first prompt's mode flag (the others run ``-c --yolo``)."""


def run_variant(fake: Any, tree: Any, scratch: Path, plugins: str, first: tuple[str, ...]) -> Any:
    """The short session's prompts through ``crab run`` (then ``-c``); cost.run_session's steps."""
    script = cost.Script(cost.SHORT)
    fake.reset(script)
    home, workspace = scratch / "home", scratch / "workspace"
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(workspace, ignore_errors=True)
    cost.write_config(home, fake.url, "progressive")
    cost.make_workspace(workspace)
    env = cost.crab_env(tree, home)
    for number, prompt in enumerate(cost.SHORT):
        mode = first if number == 0 and first else ("--yolo",)
        command = [sys.executable, "-m", "crab", "run", "--plugins", plugins, "-m", cost.MODELS["anthropic"], *mode]
        if number:
            command.append("-c")
        done = subprocess.run(
            [*command, prompt.text], cwd=workspace, env=env, capture_output=True, text=True, timeout=cost.RUN_TIMEOUT
        )
        if done.returncode != 0:
            tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["(no output)"]
            return cost.Outcome(list(fake.records), script.requests, f"prompt {number + 1}: {tail[0]}")
    return cost.Outcome(list(fake.records), script.requests)


def main() -> None:
    started = time.perf_counter()
    tree = cost.Tree("this checkout", cost.ROOT)
    subprocess.run([sys.executable, "-m", "compileall", "-q", *tree.python_path().split(":")], capture_output=True)
    print(f"crab from {cost.check_tree(tree)}\n")
    print(cost.LEGEND + "(here x today is billed in / the first row's)\n")
    fake = cost.FakeProviders(cost.Script(cost.SHORT))
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="crab-plan-bench-") as tmp:
            for label, (plugins, first) in VARIANTS.items():
                rows.append((label, cost.figures(run_variant(fake, tree, Path(tmp), plugins, first))))
    finally:
        fake.close()
    title = (
        f"anthropic, short session ({len(cost.SHORT)} prompts, {cost.Script(cost.SHORT).requests} scripted requests)"
    )
    cost.print_table(title, rows, float(rows[0][1]["billed"]))
    print(f"{time.perf_counter() - started:.0f} s wall")


if __name__ == "__main__":
    main()
