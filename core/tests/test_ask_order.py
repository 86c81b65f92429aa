"""A question about a tool call reaches whoever answers it after the call itself was shown: through
a program's ``ask=`` (events iterated async or sync) and on the CLI's plain renderer, for a
provider that streams its calls and for one that does not (issue 42 item 7)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from pathlib import Path

import crab
import pytest
from crab._builtin.render_plain import PlainRenderer
from crab.testing import ScriptedProvider

QUIET = {"user_config": False, "project_config": False, "environment": False}


class Silent(ScriptedProvider):
    """A provider that streams no ``ToolCallEvent``: its calls come only in the final message."""

    async def stream(self, request: crab.ModelRequest) -> AsyncIterator[crab.events.StreamEvent]:
        async for event in super().stream(request):
            if not isinstance(event, crab.events.ToolCallEvent):
                yield event


def provider(streams_calls: bool) -> ScriptedProvider:
    script = [
        [{"tool": "add", "args": {"a": 1}}, {"tool": "save", "args": {"text": "x"}}],
        [{"tool": "save", "args": {"text": "y"}}],
        [{"text": "done"}],
    ]
    return ScriptedProvider(script) if streams_calls else Silent(script)


@crab.tool(permission="read")
def add(a: int) -> str:
    """Add one to ``a``."""
    return str(a + 1)


@crab.tool(permission="write")
def save(text: str) -> str:
    """Save ``text``."""
    return f"saved {text}"


def shown_before_asked(seen: list[str]) -> None:
    asked = [line for line in seen if line.startswith("ASK")]
    assert len(asked) == 2, seen
    for line in asked:
        call_id = line.split()[1]
        assert f"EVENT {call_id}" in seen[: seen.index(line)], seen


@pytest.mark.parametrize("streams_calls", [True, False], ids=["streamed", "unstreamed"])
def test_a_program_iterating_events_sees_each_call_before_its_question(crab_home: Path, streams_calls: bool) -> None:
    seen: list[str] = []

    async def ask(request: crab.PermissionRequest) -> str:
        seen.append(f"ASK {request.call_id}")
        return "once"

    async def main() -> None:
        async with crab.Agent(
            provider=provider(streams_calls), tools=[add, save], plugins=[], ask=ask, **QUIET
        ) as agent:
            async for event in agent.run_stream("go"):
                if isinstance(event, crab.events.ToolCallEvent):
                    await asyncio.sleep(0)  # the program takes its time with the event
                    seen.append(f"EVENT {event.call.id}")

    asyncio.run(main())
    shown_before_asked(seen)


def test_a_program_iterating_events_sync_sees_each_call_before_its_question(crab_home: Path) -> None:
    seen: list[str] = []

    def ask(request: crab.PermissionRequest) -> str:
        seen.append(f"ASK {request.call_id}")
        return "once"

    with crab.Agent(provider=provider(True), tools=[add, save], plugins=[], ask=ask, **QUIET) as agent:
        for event in agent.run_stream_sync("go"):
            if isinstance(event, crab.events.ToolCallEvent):
                seen.append(f"EVENT {event.call.id}")
    shown_before_asked(seen)


def test_a_run_not_iterated_still_gets_its_questions_asked(crab_home: Path) -> None:
    asked: list[str] = []

    def ask(request: crab.PermissionRequest) -> str:
        asked.append(request.call_id)
        return "once"

    with crab.Agent(provider=provider(True), tools=[add, save], plugins=[], ask=ask, **QUIET) as agent:
        result = agent.run_sync("go")
    assert result.text == "done" and len(asked) == 2


@pytest.mark.parametrize("streams_calls", [True, False], ids=["streamed", "unstreamed"])
def test_the_plain_renderer_shows_the_call_before_its_question(crab_home: Path, streams_calls: bool) -> None:
    screen = io.StringIO()

    def ask(request: crab.PermissionRequest) -> str:
        screen.write(f"ASK {request.tool}({request.call_id})\n")
        return "once"

    renderer = PlainRenderer(crab.rendering.RenderTarget(out=screen, err=screen))
    with crab.Agent(
        provider=provider(streams_calls), tools=[add, save], plugins=[], ask=ask, renderer=renderer, **QUIET
    ) as agent:
        agent.run_sync("go")
    lines = screen.getvalue().splitlines()
    calls = [n for n, line in enumerate(lines) if line.startswith("→ save(")]
    asks = [n for n, line in enumerate(lines) if line.startswith("ASK save(")]
    assert len(calls) == 2 and len(asks) == 2, lines
    assert all(call < ask for call, ask in zip(calls, asks, strict=True)), lines


@crab.tool(permission="read")
async def pick(ctx: crab.ToolContext) -> str:
    """Ask the user to pick a colour."""
    assert ctx.question is not None
    return str(await ctx.question(crab.Question("which colour?", ("red", "blue"))))


def test_a_tools_question_reaches_the_program_after_the_call(crab_home: Path) -> None:
    seen: list[str] = []

    def question(asked: crab.Question) -> str:
        seen.append(f"ASK {asked.text}")
        return "blue"

    async def main() -> str:
        script = [[{"tool": "pick", "args": {}, "id": "q1"}], [{"text": "done"}]]
        async with crab.Agent(
            provider=ScriptedProvider(script), tools=[pick], plugins=[], question=question, **QUIET
        ) as agent:
            run = agent.run_stream("go")
            async for event in run:
                if isinstance(event, crab.events.ToolCallEvent):
                    await asyncio.sleep(0)
                    seen.append(f"EVENT {event.call.id}")
            return (await run.result()).tool_calls[0].result or ""

    assert asyncio.run(main()) == "blue"
    assert seen == ["EVENT q1", "ASK which colour?"]
