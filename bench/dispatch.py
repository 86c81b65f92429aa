"""Dispatch benchmark: CPU per hook call through crab's dispatcher beside pluggy's own call
(``PluginManager.hook.<name>(...)``) on the same plugin manager, with 1 and with 20 plugins, in one run.

Cases, each a real ``PluginHost`` (``crab.testing.build_host``, core's built-in plugins left out so
only the plugins below implement the hook):

- ``crab_event`` implemented by every plugin (a no-op ``def crab_event(event)``: an argument
  subset), the hook called most (every event of every turn);
- ``crab_event`` implemented by none of them (the plugins implement ``crab_doctor`` only): what
  an installed plugin that does nothing for a call costs that call;
- ``crab_before_tool_call`` implemented by every plugin (a no-op returning None, plain function):
  the interceptor every tool call passes; crab's side is ``Dispatcher.before_tool_call`` (it
  awaits, so it runs inside one event loop for all repetitions), pluggy's side calls the hook
  and awaits nothing (it cannot chain ``Replace`` or stop at a ``Deny``: a floor, not an equal).

It prints the median over ``--runs`` of CPU time (``time.process_time``) per call in microseconds.

    python bench/dispatch.py [--calls 20000] [--runs 7]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import crab
from crab._contracts.events import NoticeEvent
from crab.testing import build_host


def _event_plugin() -> object:
    def crab_event(event: Any) -> None:
        return None

    return types.SimpleNamespace(crab_event=crab.hookimpl(crab_event))


def _idle_plugin() -> object:
    return types.SimpleNamespace(crab_doctor=crab.hookimpl(lambda config: None))


def _gate_plugin() -> object:
    def crab_before_tool_call(call: Any, tool: Any, ctx: Any) -> None:
        return None

    return types.SimpleNamespace(crab_before_tool_call=crab.hookimpl(crab_before_tool_call))


def _host(make: Callable[[], object], count: int) -> Any:
    return build_host({f"p{i}": make() for i in range(count)}, builtins=False)


def _cpu_per_call(run: Callable[[int], None], calls: int, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.process_time()
        run(calls)
        samples.append((time.process_time() - start) / calls * 1e6)
    return statistics.median(samples)


def _event_case(make: Callable[[], object], count: int, calls: int, runs: int) -> tuple[float, float]:
    host = _host(make, count)
    event = NoticeEvent("bench")
    dispatch, hook = host.dispatch, host.pm.hook.crab_event

    def crab_side(n: int) -> None:
        for _ in range(n):
            dispatch.observe("crab_event", event=event, session_id="s")

    def pluggy_side(n: int) -> None:
        for _ in range(n):
            hook(event=event, session_id="s")

    return _cpu_per_call(crab_side, calls, runs), _cpu_per_call(pluggy_side, calls, runs)


def _gate_case(count: int, calls: int, runs: int) -> tuple[float, float]:
    from crab._contracts.messages import ToolCall
    from crab._contracts.tools import ToolContext

    host = _host(_gate_plugin, count)

    @crab.tool
    def noop() -> str:
        """Do nothing."""
        return ""

    call = ToolCall("c1", "noop", {})
    ctx = ToolContext(session_id="s", workspace=Path("."), call_id="c1")
    dispatch, hook = host.dispatch, host.pm.hook.crab_before_tool_call

    async def crab_calls(n: int) -> None:
        for _ in range(n):
            await dispatch.before_tool_call(call, noop, ctx)

    def crab_side(n: int) -> None:
        asyncio.run(crab_calls(n))

    def pluggy_side(n: int) -> None:
        for _ in range(n):
            hook(call=call, tool=noop, ctx=ctx)

    return _cpu_per_call(crab_side, calls, runs), _cpu_per_call(pluggy_side, calls, runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"{'case':<52} {'crab µs/call':>13} {'pluggy µs/call':>15}")
    for count in (1, 20):
        rows = [
            (f"crab_event, {count} plugin(s) implement it", _event_case(_event_plugin, count, args.calls, args.runs)),
            (
                f"crab_event, {count} plugin(s) installed, none implements it",
                _event_case(_idle_plugin, count, args.calls, args.runs),
            ),
            (f"crab_before_tool_call, {count} plugin(s) implement it", _gate_case(count, args.calls, args.runs)),
        ]
        for label, (ours, theirs) in rows:
            print(f"{label:<52} {ours:>13.2f} {theirs:>15.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
