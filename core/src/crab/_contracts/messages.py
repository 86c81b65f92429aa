"""The conversation model: messages, tool calls, thinking blocks and usage (frozen dataclasses), and
their versioned JSON form (``message_to_dict``/``message_from_dict``, docs/format.md)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from crab._contracts.images import ImagePart, image_from_dict, image_to_dict

FORMAT_VERSION = 1
"""Version of the JSON shape of messages and events; bumped on incompatible changes."""

_SURROGATE = re.compile("[\ud800-\udfff]")


# Text inside crab may hold lone surrogates (a model's "\udcff" escape, a file name decoded with
# surrogateescape): they must reach the tool that asked for them intact, but never crash a hash or
# leave crab as invalid UTF-8, hence hash_bytes, valid_text and json_text.


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so it always encodes as UTF-8."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def json_text(value: Any, *, indent: int | None = None, sort_keys: bool = False) -> str:
    """``value`` as JSON text that is valid UTF-8: the one serialiser for JSON leaving crab."""
    return valid_text(json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys))


def hash_bytes(text: str) -> bytes:
    """``text`` as bytes for hashing: UTF-8, with lone surrogates passed through (never raises)."""
    return text.encode("utf-8", "surrogatepass")


StopReason = Literal["end", "tool_use", "max_tokens", "aborted", "error"]
"""Why an assistant message ended. ``aborted`` and ``error`` messages are never replayed."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for.

    ``arguments`` holds the parsed JSON object. When the model sent arguments that are not a JSON
    object, ``arguments`` is empty, ``raw_arguments`` keeps what was sent and ``parse_error`` says
    what is wrong; the loop answers such a call with an error result and never runs the tool.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    parse_error: str | None = None


@dataclass(frozen=True, slots=True)
class Thinking:
    """A block of model reasoning; ``signature`` is kept so providers that sign it can replay it."""

    text: str
    signature: str | None = None
    redacted: bool = False


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts for one model call (or a sum of them); ``cost`` is in US dollars when known."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float | None = None

    def __add__(self, other: Usage) -> Usage:
        cost: float | None
        cost = None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cost=cost,
        )


@dataclass(frozen=True, slots=True)
class UserMessage:
    """Text the user (or a channel acting for them) sent, and the images they attached."""

    content: str
    role: Literal["user"] = "user"
    images: tuple[ImagePart, ...] = ()


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """One model reply: text, reasoning, the tool calls it asked for and why it stopped."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    thinking: tuple[Thinking, ...] = ()
    stop_reason: StopReason = "end"
    usage: Usage | None = None
    model: str | None = None
    provider: str | None = None
    error: str | None = None
    role: Literal["assistant"] = "assistant"

    @property
    def replayable(self) -> bool:
        """False for aborted or failed replies, which must never be sent to a provider again."""
        return self.stop_reason not in ("aborted", "error")


@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    """The answer to one tool call, paired with it by ``call_id``; ``images`` a tool gave back."""

    call_id: str
    name: str
    content: str
    is_error: bool = False
    role: Literal["tool"] = "tool"
    images: tuple[ImagePart, ...] = ()


Message = UserMessage | AssistantMessage | ToolResultMessage


def parse_tool_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """``(arguments, parse_error)`` for the complete arguments string of a tool call; never raises.

    Empty text means no arguments. Anything that is not a JSON object gives ``{}`` and a one-line
    reason, which the loop returns to the model together with the raw string.
    """
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return {}, f"the arguments are not valid JSON ({exc})"
    except RecursionError:  # json.loads recurses into nested arrays and objects
        return {}, _TOO_DEEP
    if not isinstance(value, dict):
        return {}, f"the arguments must be a JSON object, not {type(value).__name__}"
    if _deeper_than(value, MAX_ARGUMENT_DEPTH):
        return {}, _TOO_DEEP
    return value, None


MAX_ARGUMENT_DEPTH = 100
"""Nesting allowed in tool arguments: redaction, hashing and stores walk them recursively."""
_TOO_DEEP = f"the arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep; send a flatter JSON object"


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects in ``value`` nest more than ``limit`` levels (no recursion)."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def usage_to_dict(usage: Usage) -> dict[str, Any]:
    data: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
    }
    for key in ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
        value = getattr(usage, key)
        if value:
            data[key] = value
    if usage.cost is not None:
        data["cost"] = usage.cost
    return data


def usage_from_dict(data: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=int(data.get("input_tokens", 0)),
        output_tokens=int(data.get("output_tokens", 0)),
        cache_read_tokens=int(data.get("cache_read_tokens", 0)),
        cache_write_tokens=int(data.get("cache_write_tokens", 0)),
        reasoning_tokens=int(data.get("reasoning_tokens", 0)),
        cost=data.get("cost"),
    )


def tool_call_to_dict(call: ToolCall) -> dict[str, Any]:
    data: dict[str, Any] = {"id": call.id, "name": call.name, "arguments": call.arguments}
    if call.raw_arguments is not None:
        data["raw_arguments"] = call.raw_arguments
    if call.parse_error is not None:
        data["parse_error"] = call.parse_error
    return data


def tool_call_from_dict(data: dict[str, Any]) -> ToolCall:
    return ToolCall(
        id=str(data["id"]),
        name=str(data["name"]),
        arguments=dict(data.get("arguments") or {}),
        raw_arguments=data.get("raw_arguments"),
        parse_error=data.get("parse_error"),
    )


def message_to_dict(message: Message, *, inline_images: bool = False) -> dict[str, Any]:
    """The versioned JSON object for a message (see docs/format.md).

    Images are references (media type, sha256, size) to blobs kept beside the session;
    ``inline_images`` adds their bytes as base64 (for a store that keeps no blobs).
    """
    if isinstance(message, UserMessage):
        user: dict[str, Any] = {"v": FORMAT_VERSION, "role": "user", "content": message.content}
        if message.images:
            user["images"] = [image_to_dict(i, inline=inline_images) for i in message.images]
        return user
    if isinstance(message, ToolResultMessage):
        data: dict[str, Any] = {
            "v": FORMAT_VERSION,
            "role": "tool",
            "call_id": message.call_id,
            "name": message.name,
            "content": message.content,
        }
        if message.is_error:
            data["is_error"] = True
        if message.images:
            data["images"] = [image_to_dict(i, inline=inline_images) for i in message.images]
        return data
    out: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "role": "assistant",
        "content": message.content,
        "stop_reason": message.stop_reason,
    }
    if message.tool_calls:
        out["tool_calls"] = [tool_call_to_dict(c) for c in message.tool_calls]
    if message.thinking:
        out["thinking"] = [
            {k: v for k, v in (("text", t.text), ("signature", t.signature), ("redacted", t.redacted)) if v}
            for t in message.thinking
        ]
    if message.usage is not None:
        out["usage"] = usage_to_dict(message.usage)
    for key in ("model", "provider", "error"):
        value = getattr(message, key)
        if value is not None:
            out[key] = value
    return out


def message_from_dict(data: dict[str, Any]) -> Message:
    """Inverse of ``message_to_dict``; raises ``ValueError`` for an unknown role or version.

    Image parts come back with their bytes only when they were inlined; otherwise ``loaded`` is
    False and the bytes are the store's blob of that sha256 (``crab.storage.BlobStore.get_blob``).
    """
    version = data.get("v", FORMAT_VERSION)
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ValueError(f"message format v{version} is newer than this crab understands (v{FORMAT_VERSION})")
    role = data.get("role")
    if role == "user":
        return UserMessage(content=str(data.get("content", "")), images=_images(data))
    if role == "tool":
        return ToolResultMessage(
            call_id=str(data["call_id"]),
            name=str(data.get("name", "")),
            content=str(data.get("content", "")),
            is_error=bool(data.get("is_error", False)),
            images=_images(data),
        )
    if role == "assistant":
        usage = data.get("usage")
        return AssistantMessage(
            content=str(data.get("content", "")),
            tool_calls=tuple(tool_call_from_dict(c) for c in data.get("tool_calls", ())),
            thinking=tuple(
                Thinking(
                    text=str(t.get("text", "")),
                    signature=t.get("signature"),
                    redacted=bool(t.get("redacted", False)),
                )
                for t in data.get("thinking", ())
            ),
            stop_reason=data.get("stop_reason", "end"),
            usage=usage_from_dict(usage) if usage else None,
            model=data.get("model"),
            provider=data.get("provider"),
            error=data.get("error"),
        )
    raise ValueError(f"unknown message role {role!r}")


def _images(data: dict[str, Any]) -> tuple[ImagePart, ...]:
    return tuple(image_from_dict(item) for item in data.get("images") or ())


_last_extends: tuple[tuple[Message, ...], tuple[Message, ...], bool] | None = None


def extends(messages: tuple[Message, ...], known: tuple[Message, ...]) -> bool:
    """Whether ``messages`` starts with ``known`` (the context of one request grown into the next).

    What keeps a per-request cache (the token budget, the progressive tool view) asks this of
    the same two tuples in a row; the answer for the last pair is kept (with the tuples, so their
    ids stay theirs), so the element by element comparison runs once per request, not per cache.
    """
    global _last_extends
    last = _last_extends
    if last is not None and last[0] is messages and last[1] is known:
        return last[2]
    count = len(known)
    # Tuples compare element by element, identity first: one C loop over the shared prefix.
    answer = len(messages) >= count and (count == 0 or messages[:count] == known)
    _last_extends = (messages, known, answer)
    return answer


def unique_id(call_id: str, taken: set[str]) -> str:
    """``call_id``, or it with a ``_2``, ``_3``… suffix when an earlier call of the reply has it.

    The loop pairs results with calls by id, so two calls sharing one would leave one of them
    without a result. ``taken`` is updated.
    """
    candidate, n = call_id, 1
    while candidate in taken:
        n += 1
        candidate = f"{call_id}_{n}"
    taken.add(candidate)
    return candidate
