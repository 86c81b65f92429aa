"""The loop's shape: loop features reach it only through hooks, every model call takes one path,
and what a model call costs does not depend on how long the turn is (caches equal a fresh count)."""

from __future__ import annotations

import ast
import threading
import types
from pathlib import Path

import crab
from crab._builtin.loop_guard import GuardPlugin
from crab._contracts.events import ToolResultEvent, TurnEnded, TurnStarted
from crab._contracts.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from crab._contracts.providers import ModelRequest
from crab._contracts.tools import ToolContext, ToolSpec
from crab._values.budget import TokenBudget, request_tokens
from crab._values.history import unpaired_calls

SRC = Path(crab.__file__).parent


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside functions (``TYPE_CHECKING`` too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_loop_imports_nothing_from_the_builtin_plugins() -> None:
    offenders = {
        path.name: sorted(m for m in imports(path) if m.startswith("crab._builtin"))
        for path in (SRC / "_loop").glob("*.py")
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def calls_of(attribute: str) -> list[str]:
    """Modules under ``crab`` that call ``something.<attribute>(…)``."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attribute:
                found.append(str(path.relative_to(SRC)))
                break
    return found


def test_before_model_call_is_dispatched_and_model_calls_recorded_in_one_place() -> None:
    assert calls_of("before_model_call") == ["_loop/model_call.py"]
    recording = [
        str(path.relative_to(SRC))
        for path in sorted(SRC.rglob("*.py"))
        if '"kind": "model_call"' in path.read_text() and path.parent.name != "testing"  # the store contract's data
    ]
    assert recording == ["_loop/model_call.py"]


def test_a_compaction_summary_call_takes_the_same_path_as_a_turn_call(crab_agent) -> None:
    seen: list[str] = []

    class Spy:
        @crab.hookimpl
        def crab_before_model_call(self, request: ModelRequest, session_id: str) -> None:
            last = request.messages[-1].content if request.messages else ""
            seen.append("summary" if last.startswith("[crab] Compaction") else "turn")

    replies = [[{"text": f"answer {n}"}, {"usage": {"input_tokens": 10, "output_tokens": 5}}] for n in range(3)]
    replies.append([{"text": "Goal: the summary"}, {"usage": {"input_tokens": 7, "output_tokens": 3}}])
    h = crab_agent(replies, plugins={"spy": Spy()})
    for n in range(3):
        h.run(f"question {n}")
    compacted = h.run_async(h.agent.context.compact(h.session, "manual"))
    assert compacted is not None and compacted.usage.input_tokens == 7
    assert seen == ["turn", "turn", "turn", "summary"]
    entries = h.run_async(h.store.entries(h.session.id))
    calls = [e.payload for e in entries if e.type == "event" and e.payload["kind"] == "model_call"]
    assert [c.get("purpose", "turn") for c in calls] == ["turn", "turn", "turn", "compaction"]
    assert calls[-1]["usage"]["input_tokens"] == 7 and "system_sha256" in calls[-1]
    assert len(h.events_of(crab.events.UsageEvent)) == 4  # priced and reported once per call


@crab.tool
async def step(n: int) -> str:
    """Take one step."""
    return f"step {n} on {threading.current_thread().name}"


def plugin(*tools: crab.Tool) -> object:
    return types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: list(tools)))


def test_a_plugin_can_end_the_turn_with_deny_end_turn(crab_agent) -> None:
    class Stopper:
        @crab.hookimpl
        def crab_before_tool_call(self, call: ToolCall, tool: crab.Tool, ctx: ToolContext) -> crab.hooks.Deny | None:
            return crab.hooks.Deny("budget spent", end_turn=True) if call.arguments["n"] == 2 else None

    reply = [{"tool": "step", "args": {"n": n}} for n in (1, 2)]
    h = crab_agent(
        [reply, [{"tool": "step", "args": {"n": 3}}], [{"text": "never"}]],
        plugins={
            "p": plugin(step),
            "stopper": Stopper(),
        },
    )
    outcome = h.run("go")
    assert outcome.stop == "guard" and outcome.error == "budget spent"
    results = {e.call_id: e for e in h.events_of(ToolResultEvent)}
    assert [r.content.split(" on ")[0] for r in results.values()] == ["step 1", "budget spent"]
    assert len(h.requests) == 1
    assert unpaired_calls(h.session.messages) == []


def test_an_async_tool_runs_on_the_loop_thread_without_a_thread_of_its_own(crab_agent) -> None:
    h = crab_agent([[{"tool": "step", "args": {"n": 1}}], [{"text": "done"}]], plugins={"p": plugin(step)})
    before = threading.active_count()
    h.run("go")
    (result,) = h.events_of(ToolResultEvent)
    assert result.content == f"step 1 on {threading.current_thread().name}"
    assert threading.active_count() == before


def test_the_guard_watches_only_calls_inside_a_running_turn() -> None:
    guard = GuardPlugin()
    call = ToolCall("c", "step", {"n": 1})
    ctx = ToolContext("s1", Path("."), call_id="c")
    assert all(guard.crab_before_tool_call(call, step, ctx) is None for _ in range(10))  # a bridge's calls
    guard.crab_event(TurnStarted("s1", "t1", "go"), "s1")
    verdicts = []
    for n in range(5):
        denied = guard.crab_before_tool_call(call, step, ToolContext("s1", Path("."), call_id=f"c{n}"))
        if denied is None:
            guard.crab_after_tool_call(
                call, step, crab.ToolResult("same"), ToolContext("s1", Path("."), call_id=f"c{n}")
            )
        verdicts.append(denied)
    assert verdicts[:3] == [None, None, None]
    assert verdicts[3] is not None and not verdicts[3].end_turn
    assert verdicts[4] is not None and verdicts[4].end_turn
    guard.crab_event(TurnEnded("s1", "t1", "guard", "", crab.messages.Usage(), None), "s1")
    assert guard.crab_before_tool_call(call, step, ctx) is None


def test_the_budget_cache_always_equals_a_fresh_count() -> None:
    budget = TokenBudget(100_000)
    tools = (ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),)
    messages: tuple = (UserMessage("hello"),)
    for n in range(30):
        call = ToolCall(f"c{n}", "read", {"path": f"file {n}.txt"})
        messages = (*messages, AssistantMessage("", tool_calls=(call,)), ToolResultMessage(f"c{n}", "read", "x" * n))
        request = ModelRequest(model="m", system="sys", messages=messages, tools=tools if n % 3 else ())
        assert budget.raw(request) == request_tokens(request)
    rewritten = ModelRequest(model="m", system="sys", messages=(UserMessage("summary"), *messages[-4:]), tools=tools)
    assert budget.raw(rewritten) == request_tokens(rewritten)
    replaced = ModelRequest(model="m", system="", messages=(*messages[:-1], ToolResultMessage("c29", "read", "y")))
    assert budget.raw(replaced) == request_tokens(replaced)
