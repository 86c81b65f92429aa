"""Loop cost benchmark: CPU per iteration as a turn grows, and per tool call in one wide reply.

Side by side in one run, each figure from a fresh interpreter (best of ``--repeat`` runs,
``time.process_time``, so every thread's CPU counts and waiting does not):

- a scripted turn (the scripted provider, keeping no requests) of N sequential tool calls (one model call + one call of a no-op async tool
  per iteration) at N = 200, 667 and 2,000, on the memory store and on each installed persistent
  store (jsonl tape, sqlite): CPU per iteration, and the ratio N=2,000 / N=200 (a loop whose
  cost does not grow with the turn stays near 1.0; targets: <= 1.3x and <= 0.5 ms);
- one reply carrying 200 tool calls: CPU per call (targets: <= 0.1 ms, and with ``--llm-python``
  at most twice llm's through the same reply);
- the same two shapes through ``llm`` (simonw/llm's tool chain with a scripted model), when
  ``--llm-python`` names an interpreter that has it (or this one does);
- with ``--before DIR`` (a checkout of an older crab, e.g. ``git worktree add DIR main``), every
  crab figure again from DIR's ``core/src``, printed beside today's;
- with ``--plugins installed``, every installed plugin loads as it would for a user who installed
  them all (entry points, default config; ``$CRAB_HOME`` an empty folder), beside the tool's own
  plugin: what plugins that do nothing for a call cost it. The default, ``--plugins tool``, loads
  only the plugin the tool comes from.

    python bench/loop.py [--before DIR] [--llm-python PYTHON] [--repeat 3] [--tool noop|read]
                         [--plugins tool|installed] [--sizes 200,2000] [--no-stores] [--one-cpu N]

A blocking tool runs in worker threads, and a 200-call reply hands the GIL between them and the
loop: where a second core is free, those hand-offs cost more CPU than the calls themselves (``read``
in threads: 0.6-0.9 ms per call against 0.30-0.32 ms on one CPU, this 2-core machine), so such a
figure swings with the machine's load. ``read`` reads a small file on the loop where every mount is
local (``crab.tools.local_file_io``; the bench's file is one), so its figure no longer pays that,
but llm's threads and any other blocking tool do. ``--one-cpu N`` pins every worker, crab's and
llm's, to CPU N: the figure without that cost, steady under load.

llm in a venv of its own, beside this one (issue 40's per-call figures: every plugin installed,
200 reads of a small file in one reply):

    python3 -m venv /tmp/llmvenv && /tmp/llmvenv/bin/pip install llm
    python bench/loop.py --tool read --plugins installed --sizes 200,2000 --no-stores \
        --llm-python /tmp/llmvenv/bin/python

Each worker removes the folder it made under the temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SIZES = (200, 667, 2000)
WIDE = 200
STORES = ("memory", "jsonl", "sqlite")


# --- workers (run in a fresh interpreter each) -----------------------------------------------------


def _crab_harness(replies: list[Any], store_name: str, root: Path, tool: str, plugin_choice: str) -> Any:
    import types

    import crab
    from crab.testing import AgentHarness

    @crab.tool
    async def noop(path: str, offset: int = 1) -> str:
        """Do nothing."""
        return f"ok {offset}"

    plugins: dict[str, object] = {}
    if tool == "noop":
        plugins["bench"] = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [noop]))
    else:
        import crab_tools_basic

        plugins["tools-basic"] = crab_tools_basic
        (root / "file.txt").write_text("".join(f"line {i}\n" for i in range(1, 2002)))
    store: object | None = None
    if store_name == "jsonl":
        from crab_tape_jsonl.store import TapeStore

        store = TapeStore(root / "tape")
    elif store_name == "sqlite":
        from crab_store_sqlite.store import SqliteStore

        store = SqliteStore(root / "crab.db")
    settings = {"crab.max_iterations": len(replies) + 5, "crab.permissions": "yolo"}
    if plugin_choice == "installed":
        harness = _InstalledHarness(replies, plugins, settings, root, store)
    else:
        harness = AgentHarness(
            replies,
            plugins=plugins,
            config=settings,
            workspace=root,
            store=store,  # type: ignore[arg-type]
        )
    # The scripted provider keeps every request for tests; a real provider keeps none, and 2,000
    # requests each holding the whole context would make the garbage collector's work the figure.
    harness.provider.requests = _Forgotten()
    return harness


class _InstalledHarness:
    """``crab.testing.AgentHarness``'s agent, built with every installed plugin loaded (entry points,
    as ``crab run`` loads them) besides ``plugins``; ``run`` and ``close`` as the harness's."""

    def __init__(
        self, replies: list[Any], plugins: dict[str, object], settings: dict[str, Any], root: Path, store: Any
    ):
        import asyncio

        from crab._assembly.root import Layers, assemble
        from crab._builtin.memory_store import MemoryStore
        from crab.testing import ScriptedProvider

        home = root / "home"
        home.mkdir()
        os.environ["CRAB_HOME"] = str(home)  # no user config or remembered failures of this machine
        self.provider = ScriptedProvider(replies)
        built = assemble(
            workspace=root,
            layers=Layers(environment=False, settings=settings, source="--set"),
            plugins=None,  # every installed plugin, as for a user who installed them all
            objects={name: plugin for name, plugin in plugins.items() if name != "tools-basic"},
            store=store if store is not None else MemoryStore(),
            provider=self.provider,
            model="scripted",
            check_model=False,
            strict=False,
        )
        for failure in built.host.failures:
            print(f"  (installed plugins: {failure.line})", file=sys.stderr)
        self.agent = built.agent
        self.runner = asyncio.Runner()
        self.runner.run(self.agent.start())
        self.session = self.runner.run(self.agent.new_session())

    def run(self, text: str) -> Any:
        return self.runner.run(self.agent.handle_input(self.session, text))

    def close(self) -> None:
        try:
            self.runner.run(self.agent.close())
        finally:
            self.runner.close()


class _Forgotten(list):  # type: ignore[type-arg]
    def append(self, item: object) -> None:
        return None


WIDE_TURNS = 5
"""A 200-call turn takes a few tens of ms: the wide figure is the best of this many turns in one
process, after one warm-up turn (first calls import what they use)."""


def crab_worker(shape: str, n: int, store_name: str, tool: str, plugin_choice: str = "tool") -> float:
    """CPU seconds of one scripted turn (``sequential``: n replies of one call; ``wide``: one
    reply of n calls, the best of ``WIDE_TURNS`` after a warm-up), harness set-up left out."""
    name = "noop" if tool == "noop" else "read"
    # Distinct arguments and results per call, as real work has (the loop guard stops repeats).
    calls = [{"tool": name, "args": {"path": "file.txt", "offset": i + 1, "limit": 1}} for i in range(n)]
    if tool == "noop":
        for call in calls:
            del call["args"]["limit"]  # type: ignore[attr-defined]
    turns = 1 if shape == "sequential" else 1 + WIDE_TURNS
    replies: list[Any] = []
    for _ in range(turns):
        replies.extend([[call] for call in calls] if shape == "sequential" else [calls])
        replies.append([{"text": "done"}])
    root = Path(tempfile.mkdtemp(prefix="crab-bench-loop-"))
    harness = _crab_harness(replies, store_name, root, tool, plugin_choice)
    spent: list[float] = []
    try:
        for _ in range(turns):
            start = time.process_time()
            outcome = harness.run("go")
            spent.append(time.process_time() - start)
            assert outcome.stop == "end", outcome
            assert outcome.tool_calls == n, outcome
    finally:
        harness.close()
        shutil.rmtree(root, ignore_errors=True)
    return spent[0] if shape == "sequential" else min(spent[1:])


def llm_worker(shape: str, n: int, tool: str = "noop") -> float:
    """CPU seconds of the same turn through llm's tool chain (a scripted model, no network); with
    ``tool="read"`` the tool reads the asked line of a small file, as crab's ``read`` does."""
    import llm

    root = Path(tempfile.mkdtemp(prefix="crab-bench-llm-"))
    (root / "file.txt").write_text("".join(f"line {i}\n" for i in range(1, 2002)))

    def noop(path: str, offset: int = 1) -> str:
        """Do nothing (or read line ``offset`` of ``path``)."""
        if tool == "read":
            with open(root / path, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
            return f"{offset}\t{lines[offset - 1]}"
        return f"ok {offset}"

    class Scripted(llm.Model):
        model_id = "bench-scripted"
        can_stream = True
        supports_tools = True

        def __init__(self, replies: list[int]) -> None:
            self.replies = replies
            self.served = 0

        def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Any:
            calls = self.replies[self.served] if self.served < len(self.replies) else 0
            self.served += 1
            for i in range(calls):
                response.add_tool_call(
                    llm.ToolCall(
                        name="noop", arguments={"path": "file.txt", "offset": i + 1}, tool_call_id=f"c{self.served}_{i}"
                    )
                )
            if not calls:
                yield "done"

    replies = [1] * n if shape == "sequential" else [n]
    spent: list[float] = []
    try:
        for _ in range(1 if shape == "sequential" else 1 + WIDE_TURNS):
            model = Scripted(replies)
            start = time.process_time()
            chain = model.conversation(tools=[noop], chain_limit=0).chain("go")  # 0: no limit
            text = chain.text()
            spent.append(time.process_time() - start)
            assert text == "done", text
            assert model.served == len(replies) + 1, model.served
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return spent[0] if shape == "sequential" else min(spent[1:])


def worker_main(args: list[str]) -> None:
    kind, shape, n, store, tool, plugin_choice = args[0], args[1], int(args[2]), args[3], args[4], args[5]
    spent = crab_worker(shape, n, store, tool, plugin_choice) if kind == "crab" else llm_worker(shape, n, tool)
    print(json.dumps({"cpu": spent}))


# --- the driver --------------------------------------------------------------------------------------


ONE_CPU: int | None = None
"""With ``--one-cpu N``, every worker runs on that CPU alone (``os.sched_setaffinity``)."""


def _run(python: str, argv: list[str], pythonpath: str | None) -> float | None:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    # -P: bench/ is not put on sys.path, where bench/http.py would stand in for the stdlib's http.
    command = [python, "-P", __file__, "--worker", *argv]
    cpu = ONE_CPU
    pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False, preexec_fn=pin)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"  ({' '.join(argv)} failed: {tail})", file=sys.stderr)
        return None
    return float(json.loads(done.stdout.strip().splitlines()[-1])["cpu"])


def best(python: str, argv: list[str], pythonpath: str | None, repeat: int) -> float | None:
    runs = [_run(python, argv, pythonpath) for _ in range(repeat)]
    valid = [r for r in runs if r is not None]
    return min(valid) if valid else None


def _sources(checkout: Path) -> str:
    """The import path that runs ``checkout``'s crab: its core, kits and plugins (ahead of this
    environment's editable installs, whose entry points name the same modules)."""
    folders = [checkout / "core" / "src", *sorted(checkout.glob("kits/*/src")), *sorted(checkout.glob("plugins/*/src"))]
    return os.pathsep.join(str(folder) for folder in folders)


def installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _ms(value: float | None) -> str:
    return f"{value * 1000:.3f}" if value is not None else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="a checkout of an older crab to measure beside this one")
    parser.add_argument("--llm-python", help="an interpreter that has llm installed (default: this one, if it has)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tool", choices=("noop", "read"), default="noop", help="the tool each call runs")
    parser.add_argument(
        "--plugins",
        choices=("tool", "installed"),
        default="tool",
        help="load only the tool's plugin, or every installed plugin beside it",
    )
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="turn lengths, comma-separated")
    parser.add_argument("--no-stores", action="store_true", help="the memory store only")
    parser.add_argument(
        "--one-cpu",
        type=int,
        metavar="N",
        help="run every worker on CPU N alone: the figures without threads handing the GIL across cores",
    )
    options = parser.parse_args()
    global ONE_CPU
    ONE_CPU = options.one_cpu
    sizes = tuple(int(n) for n in options.sizes.split(","))
    here = sys.executable
    stores = [
        s
        for s, m in zip(STORES, (None, "crab_tape_jsonl", "crab_store_sqlite"), strict=True)
        if not m or (installed(m) and not options.no_stores)
    ]
    columns: list[tuple[str, str, str | None]] = [("now", here, None)]
    if options.before is not None:
        columns.insert(0, ("before", here, _sources(options.before.resolve())))
    llm_python = options.llm_python or (here if installed("llm") else None)
    print(
        f"CPU ms per iteration (one model call + one {options.tool} call), best of {options.repeat}, "
        f"fresh interpreter per figure, plugins: {options.plugins}"
        + (f", every worker on CPU {options.one_cpu} alone" if options.one_cpu is not None else "")
    )
    header = f"{'turn':<24}" + "".join(f"{label:>10}" for label, _, _ in columns)
    print(header + (f"{'before/now':>12}" if options.before else ""))
    ratios: dict[str, dict[str, float | None]] = {label: {} for label, _, _ in columns}
    largest: dict[str, float | None] = {}  # memory store, per iteration at the largest N
    for store in stores:
        per: dict[str, dict[int, float | None]] = {label: {} for label, _, _ in columns}
        for n in sizes:
            row = f"{store + f', N={n}':<24}"
            for label, python, path in columns:
                cpu = best(
                    python, ["crab", "sequential", str(n), store, options.tool, options.plugins], path, options.repeat
                )
                per[label][n] = cpu / n if cpu is not None else None
                row += f"{_ms(per[label][n]):>10}"
            if options.before:
                b, a = per["before"][n], per["now"][n]
                row += f"{(b / a if b and a else 0):>11.2f}x"
            print(row, flush=True)
        row = f"{store + f', N={sizes[-1]}/N={sizes[0]}':<24}"
        for label, _, _ in columns:
            small, large = per[label][sizes[0]], per[label][sizes[-1]]
            ratio = large / small if small and large else None
            ratios[label][store] = ratio
            if store == "memory":
                largest[label] = large
            row += f"{(f'{ratio:.2f}x' if ratio else '-'):>10}"
        print(row, flush=True)
    print(f"\nCPU ms per tool call, one reply carrying {WIDE} calls (memory store)")
    row = f"{'crab':<24}"
    wide: dict[str, float | None] = {}
    for label, python, path in columns:
        cpu = best(python, ["crab", "wide", str(WIDE), "memory", options.tool, options.plugins], path, options.repeat)
        wide[label] = cpu / WIDE if cpu is not None else None
        row += f"{_ms(wide[label]):>10}"
    print(row)
    llm_wide: float | None = None
    if llm_python is not None:
        version = subprocess.run(
            [llm_python, "-c", "import importlib.metadata as m; print(m.version('llm'))"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        cpu = best(llm_python, ["llm", "wide", str(WIDE), "-", options.tool, "-"], None, options.repeat)
        llm_wide = cpu / WIDE if cpu else None
        print(f"{f'llm {version}':<24}{_ms(llm_wide):>10}   (the same reply through llm's chain)")
        seq = {
            n: best(llm_python, ["llm", "sequential", str(n), "-", options.tool, "-"], None, options.repeat)
            for n in sizes
        }
        figures = "  ".join(f"N={n}: {_ms(c / n if c else None)}" for n, c in seq.items())
        print(f"{'llm, sequential':<24}{figures}   (ms per iteration)")
    else:
        print("llm: not measured (no interpreter with llm: pass --llm-python)")
    now_memory, now_wide, now_large = ratios["now"].get("memory"), wide.get("now"), largest.get("now")

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    print("\ntargets (memory store, now):")
    print(f"  N={sizes[-1]}/N={sizes[0]} <= 1.3x: {verdict(now_memory is not None and now_memory <= 1.3)}")
    print(f"  per iteration at N={sizes[-1]} <= 0.5 ms: {verdict(now_large is not None and now_large <= 5e-4)}")
    print(f"  per tool call in a {WIDE}-call reply <= 0.1 ms: {verdict(now_wide is not None and now_wide <= 1e-4)}")
    if llm_wide is not None and now_wide is not None:  # issue 40's: at most twice llm's cost through the same reply
        print(f"  per tool call <= 2x llm's: {verdict(now_wide <= 2 * llm_wide)} ({now_wide / llm_wide:.2f}x)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2:])
    else:
        main()
