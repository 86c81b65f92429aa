"""Sandbox benchmark: what crab-sandbox costs per ``bash`` call, with and without it, side by side.

Each round runs the real ``bash`` tool of crab-tools-basic (``Tool.run``, as the loop calls it)
once unsandboxed and once inside bubblewrap, alternating so machine load hits both alike; wall
time to the result, and CPU time (crab's own plus its children's: bwrap, bash, the command,
counted once every descendant is reaped) per call. The
sandboxed side is wrapped by crab-sandbox's real wrapper (``crab.processes`` seam), its bwrap
probed once beforehand, as a run does at start-up.

    python bench/sandbox.py            # 40 rounds of each command
    python bench/sandbox.py --rounds 10
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import tempfile
import time
from pathlib import Path

import crab
from crab import processes
from crab.testing import make_config
from crab_sandbox import runtime
from crab_tools_basic.bash import make_bash_tool
from crab_tools_basic.settings import load_settings

COMMANDS = ("true", "python3 -c pass", "git --version")


def _cpu() -> float:
    """CPU seconds of crab and of every child it reaped (each bwrap reaps its own descendants)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def _call(tool: crab.Tool, ctx: crab.ToolContext, command: str) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), _cpu()
    result = await crab.tools.run_tool(tool, {"command": command}, ctx)
    wall = time.perf_counter() - wall
    assert not result.is_error, result.content
    # bwrap's inner processes may end just after the outer one: count their CPU once reaped.
    deadline = time.monotonic() + 5
    while processes.descendants() and time.monotonic() < deadline:
        processes.reap_orphans()
        await asyncio.sleep(0.005)
    return wall, _cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    rounds = parser.parse_args().rounds
    probe = runtime.probe_once("")
    if not probe.works:
        raise SystemExit(f"no sandbox here: {probe.reason}")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        plain_config, boxed_config = make_config(cwd=work), make_config(cwd=work)
        tool = make_bash_tool(load_settings({}, work))
        plain = crab.ToolContext(session_id="bench", workspace=work, call_id="c", config=plain_config)
        boxed = crab.ToolContext(session_id="bench", workspace=work, call_id="c", config=boxed_config)
        runtime._active[id(boxed_config)] = runtime.Active(boxed_config, probe, "on")
        remove = processes.add_command_wrapper(runtime.wrap)
        print(f"bash tool, {rounds} calls each, alternating; {probe.reason}")
        print(f"{'command':<18} {'side':<12} {'wall median':>12} {'wall p90':>10} {'CPU median':>11}  ratio")
        try:
            for command in COMMANDS:
                times: dict[str, list[tuple[float, float]]] = {"unsandboxed": [], "sandboxed": []}
                for _ in range(rounds):
                    times["unsandboxed"].append(asyncio.run(_call(tool, plain, command)))
                    times["sandboxed"].append(asyncio.run(_call(tool, boxed, command)))
                base = statistics.median(w for w, _ in times["unsandboxed"])
                for side, samples in times.items():
                    walls = sorted(w for w, _ in samples)
                    cpus = [c for _, c in samples]
                    median = statistics.median(walls)
                    p90 = walls[int(len(walls) * 0.9) - 1]
                    print(
                        f"{command:<18} {side:<12} {median * 1000:>9.1f} ms {p90 * 1000:>7.1f} ms "
                        f"{statistics.median(cpus) * 1000:>8.1f} ms  {median / base:.2f}x"
                    )
        finally:
            remove()


if __name__ == "__main__":
    main()
