"""Dependencies and limits of a library run (docs/library.md): ``run(..., deps=)`` reaching tools
through ``crab.RunContext``, and ``crab.messages.UsageLimits`` ending the turn cleanly with
``crab.messages.UsageLimitExceeded`` naming the limit and the figures."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import crab
import pytest
from crab.testing import ScriptedProvider

QUIET = {"user_config": False, "project_config": False, "environment": False, "plugins": []}


@dataclass
class Shop:
    prices: dict[str, float]
    asked: list[str]


def price(ctx: crab.RunContext[Shop], item: str) -> float:
    """The price of an item."""
    ctx.deps.asked.append(f"{item}@{ctx.session_id}:{ctx.usage.input_tokens}:{ctx.workspace.name}")
    return ctx.deps.prices[item]


def test_a_tool_taking_a_run_context_gets_the_run_s_deps_session_usage_and_workspace(crab_home: Path, tmp_path: Path):
    provider = ScriptedProvider(
        [
            [{"tool": "price", "args": {"item": "tea"}}, {"usage": {"input_tokens": 40}}],
            [{"tool": "price", "args": {"item": "jam"}}, {"usage": {"input_tokens": 60}}],
            [{"text": "tea 2, jam 3"}],
        ]
    )
    shop = Shop({"tea": 2.0, "jam": 3.0}, [])
    with crab.Agent(provider=provider, tools=[price], workspace=tmp_path, **QUIET) as agent:
        result = agent.run_sync("prices?", deps=shop)
    assert [c.result for c in result.tool_calls] == ["2.0", "3.0"]
    assert shop.asked == [f"tea@{result.session_id}:40:{tmp_path.name}", f"jam@{result.session_id}:100:{tmp_path.name}"]
    assert "ctx" not in str(provider.requests[0].tools[0].parameters)  # injected, never asked of the model


def test_deps_are_per_run(crab_home: Path):
    provider = ScriptedProvider([[{"tool": "price", "args": {"item": "tea"}}], [{"text": "ok"}]], loop=True)
    first, second = Shop({"tea": 1.0}, []), Shop({"tea": 9.0}, [])
    with crab.Agent(provider=provider, tools=[price], **QUIET) as agent:
        a = agent.run_sync("tea?", deps=first)
        b = agent.run_sync("tea?", deps=second, session=a.session_id)
    assert (a.tool_calls[0].result, b.tool_calls[0].result) == ("1.0", "9.0")


def test_a_run_context_outside_a_library_run_has_no_deps(crab_home: Path, tmp_path: Path):
    def who(ctx: crab.RunContext[None]) -> str:
        """Say whose run this is."""
        return f"{ctx.deps}:{ctx.session_id}"

    result = asyncio.run(crab.tools.run_tool(crab.tool(who), {}, crab.ToolContext(session_id="s1", workspace=tmp_path)))
    assert result.content == "None:s1"


def loop_script() -> list[list[dict[str, Any]]]:
    """A model that calls a tool on every reply, reporting usage each time."""
    return [[{"tool": "price", "args": {"item": "tea"}}, {"usage": {"input_tokens": 100, "output_tokens": 10}}]]


def paired(items: list[Any]) -> bool:
    calls = [
        c.id for m in items if isinstance(m, crab.messages.AssistantMessage) and m.replayable for c in m.tool_calls
    ]
    results = [m.call_id for m in items if isinstance(m, crab.messages.ToolResultMessage)]
    return sorted(calls) == sorted(results)


@pytest.mark.parametrize(
    ("limits", "limit", "value", "maximum", "made", "ran"),
    [
        (crab.messages.UsageLimits(requests=3), "requests", 4, 3, 3, 3),  # the fourth model call is never made
        (crab.messages.UsageLimits(input_tokens=250), "input_tokens", 300, 250, 3, 2),  # nor a tool call past it run
        (crab.messages.UsageLimits(output_tokens=15), "output_tokens", 20, 15, 2, 1),
        (crab.messages.UsageLimits(tool_calls=2), "tool_calls", 3, 2, 3, 2),
    ],
)
def test_crossing_a_limit_ends_the_turn_cleanly_with_a_typed_error(
    crab_home: Path, limits: crab.messages.UsageLimits, limit: str, value: float, maximum: float, made: int, ran: int
):
    provider = ScriptedProvider(loop_script(), loop=True)
    shop = Shop({"tea": 1.0}, [])
    with crab.Agent(provider=provider, tools=[price], **QUIET) as agent:
        with pytest.raises(crab.messages.UsageLimitExceeded) as caught:
            agent.run_sync("loop", deps=shop, usage_limits=limits)
        error = caught.value
        assert (error.limit, error.value, error.maximum) == (limit, value, maximum)
        assert f"usage limit {limit} exceeded" in str(error) and "\n" not in str(error)
        history = agent.history_sync(error.result.session_id)
        assert paired(history)
        # Before a request: the turn is aborted; after a reply: its calls are skipped and the turn stopped.
        assert error.result.stop == ("aborted" if limit == "requests" else "guard")
        assert len(provider.requests) == made and len(shop.asked) == ran
        # The session goes on.
        provider.replies, provider.loop = [[{"text": "done"}]], False
        provider._calls = 0
        assert agent.run_sync("stop", session=error.result.session_id).text == "done"


def test_a_cost_limit_counts_priced_usage(crab_home: Path):
    class Priced(ScriptedProvider):
        def models(self) -> list[crab.ModelInfo]:
            return [crab.ModelInfo(id="scripted", provider=self.name, input_price=1000.0, output_price=0.0)]

    provider = Priced(loop_script(), loop=True)
    limits = crab.messages.UsageLimits(total_cost=0.25)
    with (
        crab.Agent(provider=provider, tools=[price], **QUIET) as agent,
        pytest.raises(crab.messages.UsageLimitExceeded) as caught,
    ):
        agent.run_sync("loop", deps=Shop({"tea": 1.0}, []), usage_limits=limits)
    assert caught.value.limit == "total_cost" and caught.value.value == pytest.approx(0.3)


def test_a_child_session_s_usage_counts_in_tokens_but_not_in_requests():
    from crab._assembly.limits import LimitWatch  # the counting alone: a child agent needs crab-subagents

    watch = LimitWatch(crab.messages.UsageLimits(requests=1, input_tokens=100))
    child = crab.events.ChildEvent(
        "child-session", "task", "call_1", crab.events.UsageEvent(crab.messages.Usage(input_tokens=60))
    )
    assert not watch.see(child) and watch.requests == 0
    assert watch.see(crab.events.ChildEvent("child-session", "task", "call_1", child))  # nested: 120 > 100
    assert watch.exceeded is not None and (watch.exceeded.limit, watch.exceeded.value) == ("input_tokens", 120)


def test_a_run_within_its_limits_ends_as_usual(crab_home: Path):
    provider = ScriptedProvider([[{"text": "hi"}, {"usage": {"input_tokens": 5}}]])
    with crab.Agent(
        provider=provider, usage_limits=crab.messages.UsageLimits(requests=1, input_tokens=5), **QUIET
    ) as agent:
        assert agent.run_sync("hello").text == "hi"


def test_limits_must_be_numbers():
    with pytest.raises(crab.UsageError, match="requests"):
        crab.messages.UsageLimits(requests=-1)
    with pytest.raises(crab.UsageError, match="tool_calls"):
        crab.messages.UsageLimits(tool_calls="3")  # type: ignore[arg-type]
