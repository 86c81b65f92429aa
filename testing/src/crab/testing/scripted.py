"""The scripted provider: replays replies step by step, so the loop can be run and debugged offline.

A script is a list of replies; each model call consumes the next one. A reply is a list of steps:

- ``{"text": "..."}`` streams text; ``{"thinking": "..."}`` streams reasoning;
- ``{"tool": "NAME", "args": {...}}`` asks for a tool call (``"raw_args": "..."`` sends arguments
  that are not valid JSON, as a broken model would; ``"id"`` sets the call id);
- ``{"delay": SECONDS}`` waits; ``{"usage": {"input_tokens": N, "output_tokens": N}}`` reports usage
  (on the final message, as every provider does: the loop prices it and emits the ``UsageEvent``);
- ``{"error": "message", "kind": "server"}`` ends the call as a provider error;
- ``{"stop": "max_tokens"}`` sets the stop reason.

With ``loop=True`` the script starts over after its last reply. ``replies`` may also be a
function of the request, for tests that answer according to what they are sent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from crab._contracts.errors import ConfigError
from crab._contracts.events import ErrorEvent, MessageEnd, StreamEvent, TextDelta, ThinkingDelta, ToolCallEvent
from crab._contracts.messages import AssistantMessage, Thinking, ToolCall
from crab._contracts.providers import ModelInfo, ModelRequest
from crab._values.message_json import parse_tool_arguments, usage_from_dict

Step = Mapping[str, Any]
Reply = Sequence[Step]
STEP_KEYS = {"text", "thinking", "tool", "delay", "usage", "error", "stop"}
STOP_REASONS = ("end", "tool_use", "max_tokens")


def validate_script(replies: Sequence[Reply]) -> None:
    """Raise ``ValueError`` naming the first malformed reply or step."""
    if not isinstance(replies, Sequence) or isinstance(replies, str):
        raise ValueError("a script is a list of replies, each a list of steps")
    for r, reply in enumerate(replies, 1):
        if not isinstance(reply, Sequence) or isinstance(reply, str):
            raise ValueError(f"reply {r} must be a list of steps")
        for s, step in enumerate(reply, 1):
            if not isinstance(step, Mapping) or not (STEP_KEYS & set(step)):
                raise ValueError(f"reply {r} step {s}: expected one of {', '.join(sorted(STEP_KEYS))}, got {step!r}")
            if "tool" in step and not isinstance(step.get("args", {}), Mapping):
                raise ValueError(f"reply {r} step {s}: args must be an object")
            if "delay" in step and not isinstance(step["delay"], int | float):
                raise ValueError(f"reply {r} step {s}: delay must be a number of seconds")
            if "stop" in step and step["stop"] not in STOP_REASONS:
                raise ValueError(f"reply {r} step {s}: stop must be one of {', '.join(STOP_REASONS)}")


class ScriptedProvider:
    """A ``crab.Provider`` that replays a script; ``requests`` keeps every request it received."""

    def __init__(
        self,
        replies: Sequence[Reply] | Callable[[ModelRequest], Reply],
        *,
        loop: bool = False,
        name: str = "mock",
        model: str = "scripted",
    ) -> None:
        if not callable(replies):
            validate_script(replies)
        self.replies = replies
        self.loop = loop
        self.name = name
        self.model = model
        self.requests: list[ModelRequest] = []
        self._calls = 0

    def models(self) -> list[ModelInfo]:
        return [ModelInfo(id=self.model, provider=self.name, context_window=1_000_000)]

    def check(self, model: str) -> None:
        return None

    def _next_reply(self, request: ModelRequest) -> Reply | None:
        if callable(self.replies):
            return self.replies(request)
        if not self.replies:
            return None
        index = self._calls - 1
        if self.loop:
            index %= len(self.replies)
        return self.replies[index] if index < len(self.replies) else None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        self._calls += 1
        reply = self._next_reply(request)
        if reply is None:
            count = 0 if callable(self.replies) else len(self.replies)
            yield ErrorEvent(
                f"the script has no reply for model call {self._calls} (it has {count})", "invalid_request"
            )
            return
        text: list[str] = []
        thinking: list[Thinking] = []
        calls: list[ToolCall] = []
        usage = None
        stop: str | None = None
        for step in reply:
            if "delay" in step:
                await asyncio.sleep(float(step["delay"]))
            if "text" in step:
                text.append(str(step["text"]))
                yield TextDelta(str(step["text"]))
            if "thinking" in step:
                thinking.append(Thinking(str(step["thinking"]), signature=step.get("signature")))
                yield ThinkingDelta(str(step["thinking"]))
            if "tool" in step:
                calls.append(self._tool_call(step, len(calls)))
            if "usage" in step:
                usage = usage_from_dict(dict(step["usage"]))
            if "error" in step:
                yield ErrorEvent(str(step["error"]), step.get("kind", "server"))
                return
            if "stop" in step:
                stop = str(step["stop"])
        for call in calls:
            yield ToolCallEvent(call)
        reason = stop or ("tool_use" if calls else "end")
        yield MessageEnd(
            AssistantMessage(
                content="".join(text),
                tool_calls=tuple(calls),
                thinking=tuple(thinking),
                stop_reason=reason,  # type: ignore[arg-type]
                usage=usage,
                model=request.model,
                provider=self.name,
            )
        )

    def _tool_call(self, step: Step, index: int) -> ToolCall:
        call_id = str(step.get("id") or f"call_{self._calls}_{index}")
        name = str(step["tool"])
        if "raw_args" in step:
            raw = str(step["raw_args"])
            parsed, problem = parse_tool_arguments(raw)
            if problem is not None:
                return ToolCall(call_id, name, {}, raw_arguments=raw, parse_error=problem)
            return ToolCall(call_id, name, parsed)
        return ToolCall(call_id, name, dict(step.get("args", {})))


def load_script(path: str) -> tuple[list[Reply], bool]:
    """Read a JSON (or TOML, ``[[replies]] steps = [...]``) script file; ``ConfigError`` when malformed."""
    from pathlib import Path

    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read script {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"script {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    try:
        if file.suffix == ".toml":
            import tomllib

            data: Any = tomllib.loads(text)
            replies: Any = [r.get("steps", []) for r in data.get("replies", [])]
        else:
            data = json.loads(text)
            replies = data.get("replies") if isinstance(data, dict) else data
        validate_script(replies)
    except (ValueError, TypeError, AttributeError) as exc:
        raise ConfigError(f"script {path}: {exc}") from None
    loop = bool(data.get("loop", False)) if isinstance(data, dict) else False
    return list(replies), loop
