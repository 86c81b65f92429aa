"""A recorded session as a script of the scripted provider's format (docs/testing.md).

Each assistant message becomes one reply: its thinking, its text, its tool calls (with their
recorded ids, so results can be matched call by call) and its usage; a reply that ended in a
provider error replays that error. Top-level ``prompts`` and ``results`` (per turn, what each call
returned when it was recorded) ride along; the script loader ignores keys it does not know.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import crab

from crab_eval.tape import RecordedSession

Rewrite = Callable[[str], str]


def _same(text: str) -> str:
    return text


def rewritten(value: Any, rewrite: Rewrite) -> Any:
    if isinstance(value, str):
        return rewrite(value)
    if isinstance(value, list):
        return [rewritten(v, rewrite) for v in value]
    if isinstance(value, dict):
        return {k: rewritten(v, rewrite) for k, v in value.items()}
    return value


def call_step(call: crab.messages.ToolCall, rewrite: Rewrite = _same) -> dict[str, Any]:
    """The step asking for ``call`` again, its paths moved by ``rewrite``."""
    step: dict[str, Any] = {"tool": call.name, "id": call.id}
    if call.raw_arguments is not None and call.parse_error:
        step["raw_args"] = rewrite(call.raw_arguments)
    else:
        step["args"] = rewritten(call.arguments, rewrite)
    return step


def reply_steps(
    message: crab.messages.AssistantMessage,
    rewrite: Rewrite = _same,
    calls: tuple[crab.messages.ToolCall, ...] | None = None,
) -> list[dict[str, Any]]:
    """The steps of one reply; ``calls`` replaces the message's own (a reply cut by ``--until``)."""
    steps: list[dict[str, Any]] = []
    for thought in message.thinking:
        if thought.text and not thought.redacted:
            steps.append({"thinking": thought.text, **({"signature": thought.signature} if thought.signature else {})})
    if message.content:
        steps.append({"text": message.content})
    if message.stop_reason == "error":
        steps.append({"error": message.error or "the recorded model call failed", "kind": "server"})
        return steps
    if message.stop_reason == "aborted":
        return steps  # the user stopped it; its calls were never run to an answer
    steps += [call_step(call, rewrite) for call in (message.tool_calls if calls is None else calls)]
    if message.usage is not None:
        steps.append({"usage": {k: v for k, v in crab.messages.usage_to_dict(message.usage).items() if k != "cost"}})
    if message.stop_reason == "max_tokens":
        steps.append({"stop": "max_tokens"})
    return steps


def session_script(session: RecordedSession) -> dict[str, Any]:
    """The whole session as one script: every reply in order, its prompts and recorded results."""
    replies = [reply_steps(message) for turn in session.turns for message in turn.replies]
    results = [  # per turn: a call id is unique within its turn only
        {
            call_id: {"content": result.content, **({"is_error": True} if result.is_error else {})}
            for call_id, result in turn.results.items()
        }
        for turn in session.turns
    ]
    return {
        "replies": replies,
        "loop": False,
        "session": session.info.id,
        "prompts": [turn.prompt for turn in session.turns],
        "results": results,
    }
