"""Dispatch benchmark: CPU per hook call through crab's dispatcher beside pluggy's own call
(``PluginManager.hook.<name>(...)``) on the same plugin manager, with 1 and with 20 plugins, in one run,
and beside pluggy's call of implementations each wrapped once in what crab's failure isolation needs
(the way to keep isolation on pluggy's own loop: a ``try`` that turns what an implementation raises
into a recorded failure, and the check that a plain hook got no awaitable).

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

pluggy's ``_multicall`` stops at the first exception; "guarded" is the floor of calling through it
with per-implementation isolation (order and ``Replace`` chaining still left out).

It prints the median over ``--runs`` of CPU time (``time.process_time``) per call in microseconds.

Then, per tool call, what the hooks cost in a real agent (``crab._assembly.root.assemble``, the
``read`` tool of crab-tools-basic, ``$CRAB_HOME`` an empty folder): ``crab_before_tool_call``,
``crab_after_tool_call`` and one ``crab_event``, with core's built-in plugins only beside every
installed plugin (as for a user who installed them all), and each installed implementation on its
own: what a plugin that does nothing for the call costs it.

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


def _guarded_hook(make: Callable[[], object], count: int, hook: str) -> Any:
    """``pm.hook.<hook>`` of a host of its own whose implementations are each wrapped as crab would
    wrap them at registration to keep one failure from stopping the others."""
    import inspect

    host = _host(make, count)
    failures: list[str] = []
    caller = getattr(host.pm.hook, hook)
    for impl in caller.get_hookimpls():

        def guarded(*args: Any, _function: Any = impl.function, _plugin: str = impl.plugin_name) -> Any:
            try:
                value = _function(*args)
            except Exception as exc:
                failures.append(f"{_plugin}: {exc}")
                return None
            if value is not None and inspect.isawaitable(value):
                failures.append(f"{_plugin}: an awaitable")
                return None
            return value

        impl.function = guarded  # type: ignore[misc]  # pluggy marks it Final; the experiment is the point
    return caller


def _cpu_per_call(run: Callable[[int], None], calls: int, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.process_time()
        run(calls)
        samples.append((time.process_time() - start) / calls * 1e6)
    return statistics.median(samples)


def _event_case(make: Callable[[], object], count: int, calls: int, runs: int) -> tuple[float, float, float]:
    host = _host(make, count)
    event = NoticeEvent("bench")
    dispatch, hook = host.dispatch, host.pm.hook.crab_event
    guarded = _guarded_hook(make, count, "crab_event")

    def crab_side(n: int) -> None:
        for _ in range(n):
            dispatch.observe("crab_event", event=event, session_id="s")

    def pluggy_side(n: int) -> None:
        for _ in range(n):
            hook(event=event, session_id="s")

    def guarded_side(n: int) -> None:
        for _ in range(n):
            guarded(event=event, session_id="s")

    return tuple(_cpu_per_call(side, calls, runs) for side in (crab_side, pluggy_side, guarded_side))  # type: ignore[return-value]


def _gate_case(count: int, calls: int, runs: int) -> tuple[float, float, float]:
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
    guarded = _guarded_hook(_gate_plugin, count, "crab_before_tool_call")

    async def crab_calls(n: int) -> None:
        for _ in range(n):
            await dispatch.before_tool_call(call, noop, ctx)

    def crab_side(n: int) -> None:
        asyncio.run(crab_calls(n))

    def pluggy_side(n: int) -> None:
        for _ in range(n):
            hook(call=call, tool=noop, ctx=ctx)

    def guarded_side(n: int) -> None:
        for _ in range(n):
            guarded(call=call, tool=noop, ctx=ctx)

    return tuple(_cpu_per_call(side, calls, runs) for side in (crab_side, pluggy_side, guarded_side))  # type: ignore[return-value]


def _agent(root: Path, everything: bool) -> Any:
    import os

    import crab_tools_basic
    from crab._assembly.root import Layers, assemble
    from crab._builtin.memory_store import MemoryStore
    from crab.testing import ScriptedProvider

    os.environ["CRAB_HOME"] = str(root / "home")
    built = assemble(
        workspace=root,
        layers=Layers(environment=False, settings={"crab.permissions": "yolo"}, source="--set"),
        plugins=None if everything else [],
        objects={} if everything else {"tools-basic": crab_tools_basic},
        store=MemoryStore(),
        provider=ScriptedProvider([]),
        model="scripted",
        check_model=False,
        strict=False,
    )
    return built.agent


def _measure_agent(
    root: Path, everything: bool, calls: int, runs: int
) -> tuple[dict[str, tuple[float, str]], list[tuple[str, float]]]:
    """(hook → (µs per call, its implementations)) and, with ``everything``, each implementation's µs."""
    import inspect

    from crab._contracts.messages import ToolCall
    from crab._contracts.tools import ToolResult

    agent = _agent(root, everything)
    runner = asyncio.Runner()
    runner.run(agent.start())
    session = runner.run(agent.new_session())
    dispatch = agent.host.dispatch
    tool = agent.host.registry("tools")["read"]
    call = ToolCall("c1", "read", {"path": "file.txt", "offset": 1, "limit": 1})
    ctx = agent.context.tool_context(session, call, tool)
    result = ToolResult("1\tone")
    event = NoticeEvent("bench")

    async def before(n: int) -> None:
        for _ in range(n):
            await dispatch.before_tool_call(call, tool, ctx)

    async def after(n: int) -> None:
        for _ in range(n):
            await dispatch.after_tool_call(call, tool, result, ctx)

    def observe(n: int) -> None:
        for _ in range(n):
            dispatch.observe("crab_event", event=event, session_id=session.id)

    cases: dict[str, Callable[[int], None]] = {
        "crab_before_tool_call": lambda n: runner.run(before(n)),
        "crab_after_tool_call": lambda n: runner.run(after(n)),
        "crab_event": observe,
    }
    rows = {
        hook: (_cpu_per_call(run, calls, runs), ", ".join(p for p, _ in dispatch.implementations(hook)))
        for hook, run in cases.items()
    }
    details: list[tuple[str, float]] = []
    arguments = {"call": call, "tool": tool, "result": result, "ctx": ctx, "event": event, "session_id": session.id}
    for hook in cases if everything else ():
        for plugin, impl in dispatch.implementations(hook):
            values = [arguments[name] for name in impl.argnames]

            def one(n: int, function: Any = impl.function, values: list[Any] = values) -> None:
                for _ in range(n):
                    answer = function(*values)
                    if inspect.isawaitable(answer):
                        answer.close()  # made, not run: what the call costs when nothing is to be done

            details.append((f"{hook} of {plugin}", _cpu_per_call(one, calls, runs)))
    runner.run(agent.close())
    runner.close()
    return rows, details


def _per_tool_call(calls: int, runs: int) -> None:
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="crab-bench-dispatch-"))
    (root / "home").mkdir()
    (root / "file.txt").write_text("one\ntwo\n")
    core, _ = _measure_agent(root, False, calls, runs)
    everything, details = _measure_agent(root, True, calls, runs)
    print(f"\n{'per read call in an agent, µs (one event)':<52} {'core only':>13} {'installed':>15}")
    for hook, (ours, names) in everything.items():
        print(f"{hook:<52} {core[hook][0]:>13.2f} {ours:>15.2f}   ({names})")
    print("each installed implementation on its own (an async one's coroutine made, not run):")
    for label, value in details:
        print(f"  {label:<50} {value:>13.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"{'case':<52} {'crab µs/call':>13} {'pluggy µs/call':>15} {'pluggy guarded':>15}")
    for count in (1, 20):
        rows = [
            (f"crab_event, {count} plugin(s) implement it", _event_case(_event_plugin, count, args.calls, args.runs)),
            (
                f"crab_event, {count} plugin(s) installed, none implements it",
                _event_case(_idle_plugin, count, args.calls, args.runs),
            ),
            (f"crab_before_tool_call, {count} plugin(s) implement it", _gate_case(count, args.calls, args.runs)),
        ]
        for label, (ours, theirs, guarded) in rows:
            print(f"{label:<52} {ours:>13.2f} {theirs:>15.2f} {guarded:>15.2f}")
    _per_tool_call(max(args.calls // 4, 1), args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
