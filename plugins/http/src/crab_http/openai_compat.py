"""The OpenAI-compatible surface: ``POST /v1/chat/completions`` and ``GET /v1/models``.

The agent behind it is one crab agent with its own tools, so a request is one crab turn: the
conversation is picked by the ``user`` field or the ``X-Crab-Conversation`` header (each value
one crab session, which keeps the history: only the last user message is new input); without
either, each request is a session of its own, and earlier messages of the request are handed
to it as a transcript. The answer is what the agent says in the turn (``Answer``), the same
streamed or not; the agent's tool calls run on the server and are not OpenAI ``tool_calls`` (a
request bringing ``tools`` of its own is refused).
OpenAI clients cannot answer permission questions: in these sessions the gate refuses writes
and commands.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

CONVERSATION_HEADER = "x-crab-conversation"
KEY_PATTERN = re.compile(r"^[\w.@:+-]{1,128}$")


class Invalid(ValueError):
    """A request that does not fit (422, with this line)."""


CALL_ENDS = frozenset({"tool_call", "tool_result", "usage"})
"""Events that come between two model calls of a turn: the next text is another call's."""


class Answer:
    """The answer's text, fed a turn's events (``event_to_dict`` JSON) one by one, streamed or not.

    Both ways it is the text of every model call of the turn, as ``crab run`` shows it on stdout
    (a remark before a tool call included: held back, a streamed answer could only arrive once the
    turn ends), two calls' texts parted by a blank line; or a command's output. ``feed`` returns what
    the event adds (a stream sends it at once); ``text`` is the whole so far."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self._call_ended = False

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def feed(self, event: Mapping[str, Any]) -> str:
        kind = event.get("type")
        added = ""
        if kind in ("text_delta", "command_output"):
            added = str(event.get("text") or "")
            if added and self.parts and self._call_ended:
                added = "\n\n" + added
        elif kind in CALL_ENDS:
            self._call_ended = True
        elif kind == "turn_end" and not self.parts:
            added = str(event.get("text") or "")  # a provider that sent its text only whole
        if added:
            self.parts.append(added)
            self._call_ended = False
        return added


def content_text(content: Any) -> str:
    """A message's ``content``: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                raise Invalid("only text content parts are accepted (no images or files)")
        return "\n".join(parts)
    if content is None:
        return ""
    raise Invalid("a message's content must be a string or a list of text parts")


def parse_request(body: Any, header_key: str | None) -> tuple[str | None, str, bool, str | None]:
    """(conversation key or None, new input text, stream?, model asked for)."""
    if not isinstance(body, Mapping):
        raise Invalid("the body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Invalid('"messages" must be a non-empty list')
    if body.get("tools") or body.get("functions"):
        raise Invalid("crab runs its own tools: a request may not bring tools or functions")
    if body.get("n") not in (None, 1):
        raise Invalid('"n" must be 1')
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise Invalid('"stream" must be true or false')
    key = header_key if header_key is not None else body.get("user")
    if key is not None and (not isinstance(key, str) or not KEY_PATTERN.match(key)):
        raise Invalid("the conversation (user field or X-Crab-Conversation) must be 1-128 letters, digits or .@:+-_")
    turns: list[tuple[str, str]] = []
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") not in ("system", "developer", "user", "assistant"):
            raise Invalid('each message needs a role of "system", "developer", "user" or "assistant"')
        turns.append((str(message["role"]), content_text(message.get("content"))))
    if turns[-1][0] != "user" or not turns[-1][1].strip():
        raise Invalid("the last message must be a user message with text")
    model = body.get("model")
    return key, turns[-1][1], stream, model if isinstance(model, str) else None


def transcript(messages: Sequence[Mapping[str, Any]]) -> str:
    """Earlier messages of a one-off request, as context for its only turn."""
    lines = []
    for message in messages[:-1]:
        text = content_text(message.get("content")).strip()
        if text:
            lines.append(f"[{message.get('role')}] {text}")
    if not lines:
        return content_text(messages[-1].get("content"))
    return (
        "The conversation so far:\n"
        + "\n\n".join(lines)
        + "\n\nThe new message:\n"
        + content_text(messages[-1].get("content"))
    )


def completion(turn_id: str, model: str, text: str, usage: Mapping[str, Any] | None, finish: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{turn_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": usage_of(usage),
    }


def chunk(turn_id: str, model: str, delta: Mapping[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{turn_id}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": dict(delta), "finish_reason": finish}],
    }


def usage_of(usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """A turn's usage in OpenAI's shape: ``prompt_tokens`` counts cached input too, as OpenAI's
    does, and ``prompt_tokens_details`` says how much was read from the cache (``cached_tokens``)
    and written to it (``cache_write_tokens``, as OpenRouter reports Claude's)."""
    usage = usage or {}
    read = int(usage.get("cache_read_tokens") or 0)
    written = int(usage.get("cache_write_tokens") or 0)
    prompt = int(usage.get("input_tokens") or 0) + read + written
    completion_tokens = int(usage.get("output_tokens") or 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": written},
    }


ABORTED = (
    "the turn was aborted before its answer was complete (turn_timeout, crab serve stopping, or an "
    "abort): what it said so far stays in the session"
)
"""The error an aborted turn answers with: an OpenAI client reads a ``finish_reason`` as a whole answer."""


def finish_reason(stop: str | None) -> str:
    return "length" if stop == "max_iterations" else "stop"


def models_list(model: str) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": model, "object": "model", "created": 0, "owned_by": "crab"}]}


def error_body(message: str, kind: str = "invalid_request_error", code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
