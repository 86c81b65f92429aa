"""crab as a library: what the public facade costs beside the loop it wraps, in one run.

Side by side, CPU time (``time.process_time``) per operation:
- building an agent: ``crab.Agent(...)`` (listing no installed plugin) and ``AgentHarness(...)``,
  both through the composition root, each started, run once and closed;
- one run of a turn with one tool call in a new session: ``crab.Agent.run_sync`` (facade:
  session, event stream, result) against ``AgentHarness.run`` (the loop's ``handle_input``);
- a typed run (``output_type=``, a dataclass) against the same run untyped, the model giving the
  same JSON answer to both, beside what validating that answer alone costs (a typed run should cost
  no more than the untyped one plus validation), on a provider with structured output of its own;
  and the characters a prompted schema adds to a prompt where the provider has none;
and the modules ``import crab`` and then ``crab.Agent`` import in a fresh interpreter.
Printed figures, never asserted: the facade should add little to a run (a ratio near 1).

    python bench/library.py [--runs 300]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
import types

import crab
from crab.testing import AgentHarness, ScriptedProvider

QUIET = {"user_config": False, "project_config": False, "environment": False}


@crab.tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


PLUGIN = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [add]))


def turn() -> list[list[dict[str, object]]]:
    return [[{"tool": "add", "args": {"a": 1, "b": 2}}], [{"text": "3"}]]


def cpu(work, runs: int) -> float:
    """Milliseconds of CPU per call of ``work`` (one warm-up call first)."""
    work()
    start = time.process_time()
    for _ in range(runs):
        work()
    return (time.process_time() - start) * 1000 / runs


def build_library() -> None:
    with crab.Agent(provider=ScriptedProvider(turn()), tools=[add], plugins=[], **QUIET) as agent:
        agent.run_sync("add")


def build_harness() -> None:
    harness = AgentHarness(turn(), plugins={"bench": PLUGIN})
    try:
        harness.run("add")
    finally:
        harness.close()


def runs_side_by_side(runs: int) -> tuple[float, float]:
    def looping(request: crab.ModelRequest) -> list[dict[str, object]]:
        # A user message asks for the tool; its result gets the answer: one tool call per run.
        return turn()[0 if isinstance(request.messages[-1], crab.messages.UserMessage) else 1]

    agent = crab.Agent(provider=ScriptedProvider(looping), tools=[add], plugins=[], **QUIET)
    harness = AgentHarness(looping, plugins={"bench": PLUGIN})
    try:
        library = cpu(lambda: agent.run_sync("add"), runs)

        def loop_run() -> None:
            # A new session per run, as the library's run without session= makes one.
            harness.session = harness.run_async(harness.agent.new_session())
            harness.run("add")

        loop = cpu(loop_run, runs)
    finally:
        agent.close()
        harness.close()
    return library, loop


@dataclasses.dataclass
class Sum:
    total: int
    terms: list[int]


ANSWER = '{"total": 3, "terms": [1, 2]}'


class NativeProvider(ScriptedProvider):
    """The scripted model, saying it has structured output (the schema rides in ``options``)."""

    structured_output = True


def typed_side_by_side(runs: int) -> tuple[float, float, float, int]:
    def answering(request: crab.ModelRequest) -> list[dict[str, object]]:
        if isinstance(request.messages[-1], crab.messages.UserMessage):
            return [{"tool": "add", "args": {"a": 1, "b": 2}}]
        return [{"text": ANSWER}]

    agent = crab.Agent(provider=NativeProvider(answering), tools=[add], plugins=[], **QUIET)
    spent = {"untyped": 0.0, "typed": 0.0}
    try:
        agent.run_sync("add")
        agent.run_sync("add", output_type=Sum)
        # Alternated, so both kinds meet the same store (it grows by a session a run) and load.
        for _ in range(runs):
            for kind in spent:
                start = time.process_time()
                agent.run_sync("add", output_type=Sum) if kind == "typed" else agent.run_sync("add")
                spent[kind] += time.process_time() - start
    finally:
        agent.close()
    untyped, typed = (spent[kind] * 1000 / runs for kind in ("untyped", "typed"))
    from crab._assembly.output import output_spec, prompted

    spec = output_spec(Sum)
    validation = cpu(lambda: output_spec(Sum).check(ANSWER), runs)
    added = len(prompted("add", spec, object())) - len("add")
    return untyped, typed, validation, added


COUNT = """
import sys
before = set(sys.modules)
import crab
after_import = set(sys.modules)
crab.Agent
print(len(after_import - before), len(set(sys.modules) - after_import))
"""


def modules() -> tuple[int, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    out = subprocess.run([sys.executable, "-c", COUNT], env=env, capture_output=True, text=True, check=True)
    first, second = out.stdout.split()
    return int(first), int(second)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ["CRAB_HOME"] = home
        os.chdir(home)
        builds = max(args.runs // 10, 5)
        library_build = cpu(build_library, builds)
        harness_build = cpu(build_harness, builds)
        library_run, loop_run = runs_side_by_side(args.runs)
        untyped, typed, validation, added = typed_side_by_side(args.runs)
    imported, agent_extra = modules()
    print(f"build + one run + close ({builds} times), CPU ms each:")
    print(f"  crab.Agent      {library_build:7.3f}")
    print(f"  AgentHarness    {harness_build:7.3f}   ratio {library_build / harness_build:.2f}")
    print(f"one run of a one-tool-call turn in a new session ({args.runs} times), CPU ms each:")
    print(f"  crab.Agent.run_sync  {library_run:7.3f}   (new session, event stream, RunResult)")
    print(f"  AgentHarness.run     {loop_run:7.3f}   (the loop's handle_input) ratio {library_run / loop_run:.2f}")
    print(f"a typed run against the same run untyped ({args.runs} times each, alternated), CPU ms each:")
    print(f"  untyped run_sync            {untyped:7.3f}")
    print(f"  typed run_sync (dataclass)  {typed:7.3f}   ratio {typed / untyped:.2f}")
    print(f"  validation alone            {validation:7.3f}   (check + build; the schema is made once per type)")
    print(f"  typed - untyped - validation {typed - untyped - validation:+7.3f}")
    print(f"  a prompted schema adds {added} characters to the prompt (providers without structured output)")
    print(f"modules: import crab {imported}, then crab.Agent {agent_extra} more")


if __name__ == "__main__":
    main()
