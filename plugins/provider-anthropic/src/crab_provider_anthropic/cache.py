"""Prompt-cache breakpoints for a Messages API body: which blocks carry ``cache_control``.

Anthropic caches the exact prefix of a request (tools, then system, then messages) up to each
block marked ``cache_control``; at most four marks a request; a mark finds an earlier cache entry
only at itself or up to 20 blocks before it; a prefix shorter than the model's minimum is never
cached (the prompt-caching guide, https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching).
So crab marks, each only when its prefix reaches the minimum:

1. the last tool (the tools change only when the set of tools does);
2. the system prompt (sent as one text block to carry the mark);
3. the end of the previous request's messages, the last block before the latest assistant reply:
   the request before this one wrote its cache there, so this one reads it back exactly, however
   many blocks the reply and its tool results added (a tool loop with many parallel calls adds
   more than the 20-block lookback, where a single rolling mark would miss and pay it all again);
4. the last block of this request, which writes the cache the next request reads at 3.

Thinking blocks (``thinking``, ``redacted_thinking``) are never marked: the API refuses it.
"""

from __future__ import annotations

from typing import Any

from crab_provider_kit import estimate_tokens

MAX_BREAKPOINTS = 4
UNMARKABLE = frozenset({"thinking", "redacted_thinking"})
BETA_1H = "extended-cache-ttl-2025-04-11"
"""The beta that introduced ``"ttl": "1h"`` (Anthropic's prompt-caching guide, "1-hour cache
duration"). The 1-hour cache is generally available now and needs only the ``ttl`` field, but
servers that speak the Messages API behind proxies (LiteLLM, older gateways) may still want the
header, and Anthropic accepts it, so crab sends it with a 1-hour cache; a server that refuses it
gets the request again without any cache field (``crab_provider_kit.CacheFallback``)."""


def control(ttl: str) -> dict[str, str]:
    """The ``cache_control`` value of one mark: ephemeral, with ``ttl`` only for the 1-hour cache."""
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


def place_breakpoints(body: dict[str, Any], *, ttl: str, min_tokens: int) -> int:
    """Mark ``body``'s tools, system prompt and latest messages in place; returns how many marks.

    A marked system prompt becomes a list of one text block, the form that carries a mark (the
    API reads both forms alike, so the cached prefix is the same). ``min_tokens`` <= 0 means the
    model has no prompt cache.
    """
    if min_tokens <= 0:
        return 0
    mark = control(ttl)
    marks: list[dict[str, Any]] = []
    prefix = 0
    tools = body.get("tools") or []
    if tools:
        prefix += estimate_tokens(tools)
        if prefix >= min_tokens:
            marks.append(tools[-1])
    system = body.get("system")
    if system:
        blocks = [{"type": "text", "text": system}] if isinstance(system, str) else system
        prefix += estimate_tokens(blocks)
        if prefix >= min_tokens:
            body["system"] = blocks
            marks.append(blocks[-1])
    for block in _message_anchors(body.get("messages") or [], prefix, min_tokens):
        if all(block is not m for m in marks):
            marks.append(block)
    # Tools and system come first: with more than four, the latest message marks matter most.
    for block in marks[-MAX_BREAKPOINTS:]:
        block["cache_control"] = dict(mark)
    return min(len(marks), MAX_BREAKPOINTS)


def _message_anchors(messages: list[dict[str, Any]], prefix: int, min_tokens: int) -> list[dict[str, Any]]:
    """The end of the previous request's messages and the end of this one's, each when its
    prefix (``prefix`` tokens before the messages) reaches ``min_tokens``."""
    last_reply = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
    previous_end: dict[str, Any] | None = None
    last: dict[str, Any] | None = None
    last_total = previous_total = 0
    total = prefix
    for index, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            total += estimate_tokens(block)
            if not isinstance(block, dict) or block.get("type") in UNMARKABLE or _empty_text(block):
                continue
            last, last_total = block, total
            if last_reply is not None and index < last_reply:
                previous_end, previous_total = block, total
    anchors = []
    if previous_end is not None and previous_total >= min_tokens:
        anchors.append(previous_end)
    if last is not None and last_total >= min_tokens:
        anchors.append(last)
    return anchors


def _empty_text(block: dict[str, Any]) -> bool:
    # The API refuses cache_control on an empty text block.
    return block.get("type") == "text" and not str(block.get("text") or "").strip()
