"""The versioned JSON form of messages, tool calls, usage and images (``message_to_dict``,
``message_from_dict``, docs/format.md), parsing a call's arguments, and what the loop asks of a
message list (``extends``, ``unique_id``)."""

from __future__ import annotations

import json
from typing import Any

from crab._contracts.images import ImagePart
from crab._contracts.messages import (
    FORMAT_VERSION,
    AssistantMessage,
    Message,
    Thinking,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)


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
    if deeper_than(value, MAX_ARGUMENT_DEPTH):
        return {}, _TOO_DEEP
    return value, None


MAX_ARGUMENT_DEPTH = 100
"""Nesting allowed in tool arguments: redaction, hashing and stores walk them recursively."""


_TOO_DEEP = f"the arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep; send a flatter JSON object"


def deeper_than(value: Any, limit: int) -> bool:
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


def image_to_dict(part: ImagePart, *, inline: bool = False) -> dict[str, Any]:
    """The JSON reference of an image: media type, sha256 and size (and base64 ``data`` if ``inline``)."""
    data: dict[str, Any] = {"media_type": part.media_type, "sha256": part.sha256, "size": part.size}
    if inline and part.data:
        data["data"] = part.base64()
    return data


def image_from_dict(data: Any) -> ImagePart:
    """Inverse of ``image_to_dict``; raises ``ValueError`` (or Key/TypeError) when malformed."""
    inline = data.get("data")
    if isinstance(inline, str):
        import base64
        import binascii

        try:
            raw = base64.b64decode(inline, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"image data is not base64: {exc}") from None
        return ImagePart(str(data["media_type"]), raw, str(data.get("sha256") or ""))
    return ImagePart(str(data["media_type"]), b"", str(data["sha256"]), int(data.get("size") or 0))
