"""The loop guard: spots a model stuck repeating itself and escalates warn → refuse → stop, as a
built-in plugin on the interception hooks (``GuardPlugin``)."""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from crab._contracts.events import Event, TurnEnded, TurnStarted
from crab._contracts.interception import Deny
from crab._contracts.messages import ToolCall
from crab._contracts.tools import Tool, ToolContext, ToolResult
from crab._host.hookspecs import hookimpl
from crab._values.utf8 import hash_bytes

Action = Literal["ok", "warn", "block", "stop"]


@dataclass(frozen=True, slots=True)
class Verdict:
    action: Action
    reason: str = ""


OK = Verdict("ok")


@dataclass(frozen=True, slots=True)
class Thresholds:
    warn: int
    block: int
    stop: int

    def action(self, count: int) -> Action:
        if count >= self.stop:
            return "stop"
        if count >= self.block:
            return "block"
        if count >= self.warn:
            return "warn"
        return "ok"


EXACT = Thresholds(3, 4, 5)
"""The same call (registered name + canonical JSON arguments) several times in a row."""
PING_PONG = Thresholds(4, 5, 6)
"""Two calls alternating A-B-A-B, counted in cycles."""
NO_PROGRESS = Thresholds(5, 6, 7)
"""The same tool with different arguments but the same result."""
_SEVERITY: dict[Action, int] = {"ok": 0, "warn": 1, "block": 2, "stop": 3}


def signature(name: str, arguments: Mapping[str, Any]) -> str:
    """Tool name plus a hash of the arguments as canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return f"{name}:{hashlib.sha256(hash_bytes(canonical)).hexdigest()[:16]}"


def result_hash(content: str) -> str:
    return hashlib.sha256(hash_bytes(content)).hexdigest()[:16]


class LoopGuard:
    """Remembers recent calls of one turn; ``check`` before a call runs, ``record`` after."""

    def __init__(self, window: int = 20) -> None:
        self._calls: deque[tuple[str, str, str | None]] = deque(maxlen=window)

    def check(self, name: str, arguments: Mapping[str, Any], sig: str | None = None) -> Verdict:
        """What to do with this call, counting it as if it were made now."""
        sig = sig or signature(name, arguments)
        history = [*self._calls, (name, sig, None)]
        verdicts = [
            self._exact(history, name),
            self._ping_pong(history),
            self._no_progress(history, name),
        ]
        return max(verdicts, key=lambda v: _SEVERITY[v.action])

    def record(self, name: str, arguments: Mapping[str, Any], result: str, sig: str | None = None) -> None:
        self._calls.append((name, sig or signature(name, arguments), result_hash(result)))

    @staticmethod
    def _exact(history: list[tuple[str, str, str | None]], name: str) -> Verdict:
        last = history[-1][1]
        count = 0
        for _, sig, _ in reversed(history):
            if sig != last:
                break
            count += 1
        action = EXACT.action(count)
        if action == "ok":
            return OK
        return Verdict(action, f"{name} was called {count} times in a row with the same arguments")

    @staticmethod
    def _ping_pong(history: list[tuple[str, str, str | None]]) -> Verdict:
        sigs = [sig for _, sig, _ in history]
        if len(sigs) < 4 or sigs[-1] == sigs[-2]:
            return OK
        a, b = sigs[-2], sigs[-1]
        length = 0
        for i, sig in enumerate(reversed(sigs)):
            if sig != (b if i % 2 == 0 else a):
                break
            length += 1
        cycles = length // 2
        action = PING_PONG.action(cycles)
        if action == "ok":
            return OK
        names = f"{history[-2][0]} and {history[-1][0]}"
        return Verdict(action, f"{names} have alternated {cycles} times with the same arguments")

    @staticmethod
    def _no_progress(history: list[tuple[str, str, str | None]], name: str) -> Verdict:
        previous = [(n, sig, res) for n, sig, res in history[:-1]]
        if not previous or previous[-1][0] != name or previous[-1][2] is None:
            return OK
        target = previous[-1][2]
        count = 1  # the call being checked, predicted to give the same result again
        seen: set[str] = set()
        for n, sig, res in reversed(previous):
            if n != name or res != target:
                break
            count += 1
            seen.add(sig)
        if len(seen) < 2:
            return OK  # identical arguments are the exact-repeat detector's business
        action = NO_PROGRESS.action(count)
        if action == "ok":
            return OK
        return Verdict(action, f"{name} gave the same result {count - 1} times in a row with different arguments")


WARNING = "[crab loop guard: {reason}. Change your approach or give your answer.]"
REFUSED = "Refused by the loop guard: {reason}. Try a different approach or give your answer."
STOPPED = "Stopped by the loop guard: {reason}."


class GuardPlugin:
    """The loop guard as interception hooks: one ``LoopGuard`` per running turn of each session.

    ``crab_before_tool_call`` (first, so a refused call is never put to the user) refuses with
    ``Deny`` and stops with ``Deny(end_turn=True)``; ``crab_after_tool_call`` records the result and
    adds the warning to it; ``crab_event`` starts a fresh guard for each turn of a session and drops
    it when the turn ends (calls outside a turn, such as a bridge's, are not a model repeating).
    """

    def __init__(self) -> None:
        self._guards: dict[str, LoopGuard] = {}
        self._open: dict[tuple[str, str], tuple[str, str | None]] = {}
        """(session, call id) → (signature, warning) of a call allowed to run, until its result."""

    @hookimpl(tryfirst=True)
    def crab_before_tool_call(self, call: ToolCall, tool: Tool, ctx: ToolContext) -> Deny | None:
        guard = self._guards.get(ctx.session_id)
        if guard is None:
            return None  # no turn of this session is running
        sig = signature(call.name, call.arguments)
        verdict = guard.check(call.name, call.arguments, sig)
        if verdict.action == "stop":
            text = STOPPED.format(reason=verdict.reason)
            guard.record(call.name, call.arguments, text, sig)
            return Deny(text, end_turn=True)
        if verdict.action == "block":
            text = REFUSED.format(reason=verdict.reason)
            guard.record(call.name, call.arguments, text, sig)
            return Deny(text)
        self._open[ctx.session_id, ctx.call_id] = (sig, verdict.reason if verdict.action == "warn" else None)
        return None

    @hookimpl(trylast=True)
    def crab_after_tool_call(
        self, call: ToolCall, tool: Tool, result: ToolResult, ctx: ToolContext
    ) -> ToolResult | None:
        opened = self._open.pop((ctx.session_id, ctx.call_id), None)
        if opened is None:
            return None
        sig, warning = opened
        if warning is not None:
            result = ToolResult(f"{result.content}\n{WARNING.format(reason=warning)}", result.is_error, result.details)
        guard = self._guards.get(ctx.session_id)
        if guard is not None:
            guard.record(call.name, call.arguments, result.content, sig)
        return result if warning is not None else None

    @hookimpl
    def crab_event(self, event: Event, session_id: str) -> None:
        if isinstance(event, TurnStarted):
            self._guards[event.session_id] = LoopGuard()
        elif isinstance(event, TurnEnded):
            self._guards.pop(event.session_id, None)
            for key in [k for k in self._open if k[0] == event.session_id]:
                del self._open[key]
