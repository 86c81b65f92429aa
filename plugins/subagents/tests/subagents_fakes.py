"""Test parts: a scripted provider that answers the parent and each agent from their own script,
and a plugin with a slow tool and a writing tool (a real file under the workspace)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import crab
from crab.testing import ScriptedProvider

AGENT = re.compile(r"# You are the subagent `([^`]+)`")


def who(request: crab.ModelRequest) -> str:
    """``parent`` or the name of the agent whose child sent ``request`` (from its instructions)."""
    found = AGENT.search(request.system)
    return found.group(1) if found else "parent"


class Router:
    """Replies from ``scripts[who]`` in order (the last one repeats; children of one agent share
    its script). With ``barrier=N`` a child's first request waits until N children have sent
    theirs: run one after the other they never would, and the waiting child fails after ``wait``
    seconds instead."""

    name = "scripted"

    def __init__(self, scripts: dict[str, Sequence[Any]], *, barrier: int = 0, wait: float = 20.0) -> None:
        self.scripts = scripts
        self.barrier = barrier
        self.wait = wait
        self.requests: list[crab.ModelRequest] = []
        self.arrived = 0
        self._seen: dict[str, int] = {}
        self._all_here: asyncio.Event | None = None
        self.child_asked: asyncio.Event | None = None

    def models(self) -> list[crab.ModelInfo]:
        return [crab.ModelInfo(id="scripted", provider=self.name, context_window=1_000_000)]

    def check(self, model: str) -> None:
        return None

    def of(self, name: str) -> list[crab.ModelRequest]:
        return [r for r in self.requests if who(r) == name]

    async def stream(self, request: crab.ModelRequest) -> AsyncIterator[crab.events.StreamEvent]:
        self.requests.append(request)
        name = who(request)
        index = self._seen.get(name, 0)
        self._seen[name] = index + 1
        script = self.scripts[name]
        reply = script[min(index, len(script) - 1)]
        if name != "parent":
            if self.child_asked is None:
                self.child_asked = asyncio.Event()
            self.child_asked.set()
            if self.barrier and len(request.messages) == 1:  # a child's first request: its prompt only
                if self._all_here is None:
                    self._all_here = asyncio.Event()
                self.arrived += 1
                if self.arrived >= self.barrier:
                    self._all_here.set()
                try:
                    await asyncio.wait_for(self._all_here.wait(), self.wait)
                except TimeoutError:
                    yield crab.events.ErrorEvent(
                        "the other child never came: children ran one after the other", "server"
                    )
                    return
        async for event in ScriptedProvider([reply]).stream(request):
            yield event


class TestTools:
    """``slow`` (sleeps, read) and ``touch`` (writes a file in the workspace, write)."""

    started: asyncio.Event | None = None

    @crab.hookimpl
    def crab_tools(self, config: crab.Config) -> list[crab.Tool]:
        async def slow(seconds: float, ctx: crab.ToolContext) -> str:
            """Sleep, then say so."""
            if TestTools.started is not None:
                TestTools.started.set()
            await asyncio.sleep(seconds)
            return "slept"

        def touch(path: str, ctx: crab.ToolContext) -> str:
            """Create an empty file."""
            (Path(ctx.workspace) / path).write_text("", encoding="utf-8")
            return f"created {path}"

        return [crab.tool(slow), crab.tool(touch, permission="write")]


def usage(n: int) -> dict[str, Any]:
    return {"usage": {"input_tokens": n, "output_tokens": n // 10}}


async def entries_by_session(store: crab.Store) -> dict[str, list[crab.storage.Entry]]:
    return {info.id: await store.entries(info.id) for info in await store.list_sessions(None, limit=1000)}


def unpaired(entries: Sequence[crab.storage.Entry]) -> list[str]:
    """Problems with call/result pairing: a call without exactly one result, or a stray result."""
    calls: list[str] = []
    for entry in entries:
        if entry.type == "message":
            calls += [str(c["id"]) for c in entry.payload.get("tool_calls", ()) or ()]
    results = [str(e.payload.get("call_id")) for e in entries if e.type == "tool_result"]
    problems = [f"call {c} has {results.count(c)} results" for c in calls if results.count(c) != 1]
    problems += [f"result {r} has no call" for r in results if r not in calls]
    return problems
