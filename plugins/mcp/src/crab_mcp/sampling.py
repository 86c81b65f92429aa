"""A server's ``sampling/createMessage``: crab's model answers it only after the user said yes.

The request is put to the user as the permission question of the tool call of that server that
is running (``ToolContext.ask``): nobody else can answer, and a request that arrives while no
call of the server runs, where nobody can be asked, or on a remote channel (unless the user's
own ``[plugins.mcp] sampling = "remote"``) is refused with a line the server reads. The question
shows the server, its system prompt and messages (each cut, all of them bounded) and the token
bound: the smaller of the server's ``max_tokens`` and ``[plugins.mcp] sampling_max_tokens``.
The model is called through ``AgentHandle.complete`` (the loop's one model-call path: hooks,
recording, redaction, one priced ``UsageEvent``, counted in the running turn), without tools,
and its answer is shown to the user as a notice (cut) before it goes back to the server.
Images and audio in the server's messages become a note with their type (crab's messages carry
text). An "always" answer approves that one request: every request is asked anew.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crab import ToolContext
    from crab.messages import AssistantMessage, Message

Complete = Callable[..., Awaitable["AssistantMessage"]]
"""``AgentHandle.complete``."""

SHOWN_PER_MESSAGE = 600
"""Characters of one of the server's messages the permission question shows."""
SHOWN_MESSAGES = 3000
"""Characters of all of them (the rest is counted, not shown)."""
SHOWN_ANSWER = 1000
"""Characters of the model's answer shown to the user in the notice."""
MAX_INPUT = 200_000
"""Characters of the server's messages crab sends to its model at most (a larger request is refused)."""


@dataclass
class SamplingPolicy:
    """What the user's config allows: ``mode`` off/ask/remote, ``max_tokens``, and the model call."""

    mode: str = "off"
    max_tokens: int = 1024
    complete: Complete | None = None
    model: str = ""


class Refused(Exception):
    """The request is refused; the text says why (the server reads it)."""


def _text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    mime = getattr(block, "mime_type", None) or kind or "content"
    return f"[{kind or 'content'} ({mime}) from the server, not passed on: crab's messages carry text]"


def message_text(message: Any) -> str:
    """One ``SamplingMessage`` as text (its blocks joined)."""
    content = message.content if isinstance(message.content, list) else [message.content]
    return "\n".join(_text(block) for block in content)


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else f"{flat[:limit]}… [{len(flat):,} characters]"


def summary(server: str, params: Any, max_tokens: int) -> str:
    """The permission question: who asks, what (bounded), and how many tokens at most."""
    lines = [f"MCP server {server!r} asks crab's model to answer (sampling), at most {max_tokens} tokens:"]
    if params.system_prompt:
        lines.append(f"  system: {_cut(params.system_prompt, SHOWN_PER_MESSAGE)}")
    used = 0
    for index, message in enumerate(params.messages):
        line = f"  {message.role}: {_cut(message_text(message), SHOWN_PER_MESSAGE)}"
        if used + len(line) > SHOWN_MESSAGES:
            lines.append(f"  … {len(params.messages) - index} more message(s) not shown")
            break
        used += len(line)
        lines.append(line)
    lines.append("The answer goes to that server (and is shown here); it counts in this turn's usage.")
    return "\n".join(lines)


def messages_of(params: Any) -> list[Message]:
    """The server's messages as crab's (user and assistant text)."""
    from crab.messages import AssistantMessage, UserMessage

    out: list[Message] = []
    for message in params.messages:
        text = message_text(message)
        out.append(UserMessage(text) if message.role == "user" else AssistantMessage(content=text))
    return out


async def answer(server: str, calls: Sequence[ToolContext], policy: SamplingPolicy, params: Any) -> tuple[str, Any]:
    """(what to log, the ``CreateMessageResult``); ``Refused`` says why not."""
    from crab import PermissionRequest
    from crab.events import NoticeEvent
    from mcp import types

    if policy.complete is None:
        raise Refused("no model of crab's runs here to answer it")
    if policy.mode == "off":
        raise Refused('sampling is off in your config ([plugins.mcp] sampling = "off")')
    ctx = calls[-1] if calls else None
    if ctx is None:
        raise Refused("no tool call of this server is running, so nobody can be asked")
    if ctx.ask is None:
        raise Refused("nobody can be asked here (no one at the keyboard)")
    if not ctx.local and policy.mode != "remote":
        raise Refused(
            'this is a remote channel; the user\'s own config allows it there with [plugins.mcp] sampling = "remote"'
        )
    if getattr(params, "tools", None):
        raise Refused("it offers tools to the model, which crab does not pass on")
    size = sum(len(message_text(m)) for m in params.messages) + len(params.system_prompt or "")
    if size > MAX_INPUT:
        raise Refused(f"its messages have {size:,} characters (crab passes on at most {MAX_INPUT:,})")
    max_tokens = max(1, min(int(params.max_tokens), policy.max_tokens))
    said = await ctx.ask(PermissionRequest(f"{server} (MCP sampling)", "network", summary(server, params, max_tokens)))
    if said not in ("once", "always"):
        raise Refused("the user declined")
    reply = await policy.complete(
        ctx.session_id, messages_of(params), system=params.system_prompt, max_tokens=max_tokens
    )
    if reply.stop_reason == "error":
        raise Refused(f"the model call failed: {reply.error or 'no reason given'}")
    text = reply.content
    ctx.emit(NoticeEvent(f"MCP {server} sampling answer (to the server): {_cut(text, SHOWN_ANSWER) or '(empty)'}"))
    stop = "maxTokens" if reply.stop_reason == "max_tokens" else "endTurn"
    result = types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=text),
        model=reply.model or policy.model or "crab",
        stop_reason=stop,
    )
    return f"sampling answered ({len(text)} characters, at most {max_tokens} tokens)", result
