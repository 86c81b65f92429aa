"""Running the tool calls of one model reply: interception hooks (through the dispatcher), timeouts,
concurrency; every call ends with exactly one result."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from crab._contracts.messages import ToolCall
from crab._contracts.tools import Tool, ToolContext, ToolResult
from crab._host.dispatch import Dispatcher
from crab._loop.tool_exec import run_tool
from crab._values.history import SKIPPED
from crab._values.router import did_you_mean

STOPPED = "Skipped: the turn was stopped before this call ran ({reason})"
MAX_RAW_ECHO = 2000

RecordResult = Callable[[ToolCall, ToolResult, float], Awaitable[None]]
MakeContext = Callable[[ToolCall, Tool], ToolContext]


@dataclass
class BatchOutcome:
    """Results of one reply's calls in call order, and why an interceptor ended the turn, if one did."""

    results: list[tuple[ToolCall, ToolResult]]
    stopped: str | None = None


@dataclass(frozen=True, slots=True)
class Executed:
    """One call's result, whether an interceptor's refusal ends the turn, and the tool's own run
    time (the tool and the after hooks; never the time a before hook, such as the permission
    question, waited; 0 when the tool did not run)."""

    result: ToolResult
    end_turn: bool = False
    duration_ms: float = 0.0


def batches(calls: Sequence[ToolCall], tools: Mapping[str, Tool]) -> list[list[ToolCall]]:
    """Consecutive non-exclusive calls form one concurrent batch; an exclusive call runs alone."""
    groups: list[list[ToolCall]] = []
    current: list[ToolCall] = []
    for call in calls:
        tool = tools.get(call.name)
        if tool is not None and tool.exclusive:
            if current:
                groups.append(current)
                current = []
            groups.append([call])
        else:
            current.append(call)
    if current:
        groups.append(current)
    return groups


class ToolRunner:
    """Executes calls for one session; the turn gives it the registry, the tool context and
    ``record``, which writes each result through the one recorder (``crab._loop.recorder``).

    Independent calls run concurrently; ``exclusive`` tools run alone. Every call ends with one
    result (executed, refused, skipped or failed) and no failure escapes as an exception (but
    ``PluginError`` in strict mode, after the batch's other calls have ended). A
    ``Deny(end_turn=True)`` ends the turn once the calls already started have ended. A call costs
    no thread and no timer task of its own (``asyncio.timeout`` bounds it in place).
    """

    def __init__(
        self,
        dispatch: Dispatcher,
        tools: Mapping[str, Tool],
        default_timeout: float,
        make_context: MakeContext,
        record: RecordResult,
    ) -> None:
        self.dispatch = dispatch
        self.tools = tools
        self.default_timeout = default_timeout
        self.make_context = make_context
        self.record = record

    async def run_all(self, calls: Sequence[ToolCall], steering_pending: Callable[[], bool]) -> BatchOutcome:
        """Run ``calls``; each gets a result recorded through ``record`` as soon as it exists."""
        outcome = BatchOutcome(results=[])
        done: dict[str, ToolResult] = {}
        for group in batches(calls, self.tools):
            if outcome.stopped is not None:
                await self._skip(group, STOPPED.format(reason=outcome.stopped), done)
                continue
            if steering_pending():
                await self._skip(group, SKIPPED, done)
                continue
            if len(group) == 1:  # the common case: no task to gather
                await self._one(group[0], outcome, done)
                continue
            ended = await asyncio.gather(*(self._one(call, outcome, done) for call in group), return_exceptions=True)
            for value in ended:  # every sibling has ended; now a strict-mode PluginError may escape
                if isinstance(value, BaseException):
                    raise value
        outcome.results = [(call, done[call.id]) for call in calls if call.id in done]
        return outcome

    async def _skip(self, group: Sequence[ToolCall], reason: str, done: dict[str, ToolResult]) -> None:
        for call in group:
            result = ToolResult(reason, is_error=True)
            done[call.id] = result
            await self.record(call, result, 0.0)

    async def _one(self, call: ToolCall, outcome: BatchOutcome, done: dict[str, ToolResult]) -> None:
        executed = await self.execute_call(call)
        if executed.end_turn and outcome.stopped is None:
            outcome.stopped = executed.result.content
        done[call.id] = executed.result
        await self.record(call, executed.result, executed.duration_ms)

    async def execute(self, call: ToolCall) -> ToolResult:
        """One call through parse check, lookup, before hooks, the tool, after hooks."""
        return (await self.execute_call(call)).result

    async def execute_call(self, call: ToolCall) -> Executed:
        """One call's result, whether an interceptor's refusal ends the turn, and how long it ran."""
        if call.parse_error is not None:
            raw = (call.raw_arguments or "")[:MAX_RAW_ECHO]
            return Executed(
                ToolResult(
                    f"Invalid arguments for {call.name}: {call.parse_error}. You sent: {raw!r}. "
                    "Send the arguments as one JSON object.",
                    is_error=True,
                )
            )
        tool = self.tools.get(call.name)
        if tool is None:
            available = ", ".join(sorted(self.tools)) or "none"
            return Executed(
                ToolResult(
                    f"Unknown tool {call.name!r}.{did_you_mean(call.name, self.tools)} Available tools: {available}.",
                    is_error=True,
                )
            )
        ctx = self.make_context(call, tool)
        call, deny = await self.dispatch.before_tool_call(call, tool, ctx)
        if deny is not None:
            return Executed(ToolResult(deny.reason, is_error=True), deny.end_turn)
        # The clock starts after the interceptors: the permission gate may wait for the user there.
        started = time.monotonic()
        timeout = tool.timeout if tool.timeout is not None else self.default_timeout
        try:
            async with asyncio.timeout(timeout):
                result = await run_tool(tool, call.arguments, ctx)
        except TimeoutError:
            result = ToolResult(f"{tool.name} timed out after {timeout:g} s and was cancelled.", is_error=True)
        except Exception as exc:
            result = ToolResult(f"{tool.name} failed: {type(exc).__name__}: {exc}", is_error=True)
        result = await self.dispatch.after_tool_call(call, tool, result, ctx)
        return Executed(result, duration_ms=(time.monotonic() - started) * 1000)
