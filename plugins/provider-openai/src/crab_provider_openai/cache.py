"""Prompt caching on chat completions: the per-session ``prompt_cache_key`` and, through gateways
that front Claude, Anthropic's ``cache_control`` marks on content parts.

OpenAI caches every prompt of 1,024 tokens or more by prefix, with no field asked; the
``prompt_cache_key`` routes the requests of one conversation to the same cache, so a long session
keeps hitting it (OpenAI's prompt-caching guide, https://platform.openai.com/docs/guides/prompt-caching).
crab sends a hash of the session id, never the id.

Gateways that speak chat completions in front of Claude (OpenRouter, LiteLLM) cache only what is
marked, the way Anthropic does: ``cache_control`` on a content part (OpenRouter's prompt-caching
guide, "Anthropic Claude": https://openrouter.ai/docs/features/prompt-caching; LiteLLM's
https://docs.litellm.ai/docs/completion/prompt_caching). crab marks the system prompt (which
caches the tools before it too), the end of the previous request's messages (the cache the last
request wrote) and the end of this one: three of Anthropic's four marks, each only when the prefix
before it reaches ``MIN_CACHE_TOKENS``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from crab_provider_kit import estimate_tokens

MIN_CACHE_TOKENS = 1024
"""The shortest prefix Claude's Sonnet and Opus models cache (Anthropic's guide, "Cache limitations")."""
MARK = {"type": "ephemeral"}
_MARKABLE_ROLES = ("user", "tool")


def prompt_cache_key(session_id: str) -> str | None:
    """The ``prompt_cache_key`` of a session: a hash, so no session id leaves the machine; None
    without a session."""
    if not session_id:
        return None
    return "crab-" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]


def place_gateway_marks(messages: list[dict[str, Any]], tools: list[dict[str, Any]], min_tokens: int) -> int:
    """Mark ``messages`` (chat-completions shape) in place for a gateway that fronts Claude;
    returns how many marks. The system message's content becomes a list of one text part
    whatever is marked, so the prefix has the same shape on every request."""
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        messages[0]["content"] = [{"type": "text", "text": messages[0]["content"]}]
    prefix = estimate_tokens(tools) if tools else 0
    last_reply = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
    system_end: int | None = None
    previous_end: int | None = None
    last_end: int | None = None
    totals: dict[int, int] = {}
    for index, message in enumerate(messages):
        prefix += estimate_tokens(message)
        totals[index] = prefix
        role = message.get("role")
        if role == "system":
            system_end = index
        elif role in _MARKABLE_ROLES and _text_part(message, create=False) is not False:
            last_end = index
            if last_reply is not None and index < last_reply:
                previous_end = index
    chosen = [i for i in (system_end, previous_end, last_end) if i is not None and totals[i] >= min_tokens]
    marked = 0
    for index in dict.fromkeys(chosen):
        part = _text_part(messages[index], create=True)
        if isinstance(part, dict):
            part["cache_control"] = dict(MARK)
            marked += 1
    return marked


def _text_part(message: dict[str, Any], *, create: bool) -> dict[str, Any] | bool:
    """The last text part of ``message`` (its string content made a list of one part when
    ``create``); False when it has none that could carry a mark."""
    content = message.get("content")
    if isinstance(content, str):
        if not content.strip():
            return False
        if not create:
            return True
        part = {"type": "text", "text": content}
        message["content"] = [part]
        return part
    if isinstance(content, list):
        for part in reversed(content):
            if isinstance(part, dict) and part.get("type") == "text" and str(part.get("text") or "").strip():
                return part
    return False
