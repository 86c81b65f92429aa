"""Builds the Messages API request: alternating user/assistant turns of content blocks, tool
results as user-side ``tool_result`` blocks, signed thinking replayed, tool schemas, options, and
the configured ``extra_body`` fields on top, and the prompt-cache marks (``cache.py``) when
caching is on.

Images are ``image`` blocks with a base64 source (anthropic-sdk-python's ``ImageBlockParam`` and
``Base64ImageSourceParam``), before the text of a user turn, as Anthropic's vision guide advises;
a tool result with images gets a list of text and image blocks as its ``content``.
"""

from __future__ import annotations

from typing import Any

from crab import ModelRequest
from crab.messages import AssistantMessage, ImagePart, Message, ToolResultMessage, UserMessage
from crab_provider_kit import merge_tables

from crab_provider_anthropic.cache import BETA_1H, place_breakpoints
from crab_provider_anthropic.extra import EXTRA_BODY
from crab_provider_anthropic.settings import API_VERSION, AnthropicSettings

EMPTY_REPLY = "(no content)"
"""Anthropic rejects an assistant turn with no content; this stands in for an empty reply."""


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for thought in message.thinking:
        # Unsigned thinking (from another provider, or cut short) is rejected on replay.
        if not thought.signature:
            continue
        if thought.redacted:
            blocks.append({"type": "redacted_thinking", "data": thought.signature})
        else:
            blocks.append({"type": "thinking", "thinking": thought.text, "signature": thought.signature})
    if message.content.strip():
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        # A call whose arguments did not parse is replayed with empty input: ``input`` must be an
        # object, and the paired error result already shows the model its raw text.
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
    if not any(b["type"] in ("text", "tool_use") for b in blocks):
        blocks.append({"type": "text", "text": EMPTY_REPLY})
    return blocks


def image_block(image: ImagePart) -> dict[str, Any]:
    """An ``image`` content block with the bytes as its base64 source."""
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.base64()}}


def message_blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    """``(role, content blocks)`` for one crab message."""
    if isinstance(message, UserMessage):
        text = [{"type": "text", "text": message.content}] if message.content.strip() else []
        return "user", [*(image_block(i) for i in message.images), *text]
    if isinstance(message, ToolResultMessage):
        content: str | list[dict[str, Any]] = message.content
        if message.images:
            text = [{"type": "text", "text": message.content}] if message.content.strip() else []
            content = [*text, *(image_block(i) for i in message.images)]
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.call_id, "content": content}
        if message.is_error:
            block["is_error"] = True
        return "user", [block]
    return "assistant", _assistant_blocks(message)


def build_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """Turns merged so roles alternate, as the API requires (tool results join the next user text)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage) and not message.replayable:
            continue
        role, blocks = message_blocks(message)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


THINKING_BUDGETS: dict[str, int] = {"off": 0, "low": 2048, "medium": 8192, "high": 24576}
"""crab's ``thinking`` levels as extended-thinking token budgets (``[plugins.anthropic] thinking_budget``
is the budget when no level is set)."""
NO_THINKING = ("claude-2", "claude-instant", "claude-3-haiku", "claude-3-sonnet", "claude-3-opus", "claude-3-5")
"""Model id prefixes of Claude models without extended thinking."""


def thinks(model: str) -> bool:
    """Whether ``model`` has extended thinking (so a ``thinking`` level reaches it)."""
    return not model.rsplit("/", 1)[-1].startswith(NO_THINKING)


def build_body(request: ModelRequest, settings: AnthropicSettings, *, cache: bool | None = None) -> dict[str, Any]:
    """The JSON body of a streaming Messages call; ``extra_body`` (table, then model) last.

    ``cache`` (default: the ``cache`` setting) places the prompt-cache marks."""
    info = settings.model_info(request.model)
    max_tokens = request.max_tokens or (info.max_output_tokens if info else None) or settings.default_max_tokens
    body: dict[str, Any] = {"model": request.model, "max_tokens": max_tokens, "stream": True}
    if request.system:
        body["system"] = request.system
    body["messages"] = build_messages(request.messages)
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools
        ]
    level = request.options.get("thinking")
    budget = THINKING_BUDGETS.get(str(level)) if level is not None else None
    if budget is None:
        budget = request.options.get("thinking_budget", settings.thinking_budget)
    if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        # The budget counts against max_tokens, which must stay larger than it.
        if max_tokens <= budget:
            body["max_tokens"] = budget + settings.default_max_tokens
    elif request.temperature is not None:
        # Extended thinking allows no temperature other than the default.
        body["temperature"] = request.temperature
    if output := request.options.get("output_schema"):
        # A typed run (crab.Agent(output_type=...)): structured outputs' JSON answer, in the text block.
        body["output_config"] = {"format": {"type": "json_schema", "schema": output["schema"]}}
    if settings.cache if cache is None else cache:
        place_breakpoints(body, ttl=settings.cache_ttl, min_tokens=settings.min_cache_tokens(request.model))
    extra = EXTRA_BODY.for_request(settings.extra_body_for(request.model), bool(request.tools))
    return merge_tables(body, extra) if extra else body


def build_headers(key: str | None, settings: AnthropicSettings, *, cache: bool | None = None) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "anthropic-version": API_VERSION,
        **settings.http.headers,
    }
    if (settings.cache if cache is None else cache) and settings.cache_ttl == "1h":
        betas = [b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()]
        headers["anthropic-beta"] = ",".join([*betas, BETA_1H] if BETA_1H not in betas else betas)
    if key:
        headers["x-api-key"] = key
    return headers


def endpoint(settings: AnthropicSettings) -> str:
    return f"{settings.http.base_url}/messages"
