"""Builds the chat-completions request: messages in OpenAI's shape, tool schemas, sampling options,
and the configured ``extra_body`` fields on top.

Images go as ``image_url`` content parts holding ``data:`` URLs (base64). A tool message takes
text parts only (openai-python's ``ChatCompletionToolMessageParam``), so the images of a run of
tool results follow it in one user message that says whose they are.

With ``cache`` on, the body carries the session's ``prompt_cache_key`` and, for a gateway that
fronts Claude, ``cache_control`` marks (``cache.py``), as the settings say.
"""

from __future__ import annotations

import json
from typing import Any

from crab import ModelRequest
from crab.messages import AssistantMessage, ImagePart, Message, ToolResultMessage, UserMessage
from crab_provider_kit import merge_tables

from crab_provider_openai.cache import MIN_CACHE_TOKENS, place_gateway_marks, prompt_cache_key
from crab_provider_openai.extra import EXTRA_BODY
from crab_provider_openai.settings import OpenAISettings


def message_to_openai(message: Message) -> dict[str, Any]:
    """One crab message as a chat-completions message."""
    if isinstance(message, UserMessage):
        if message.images:
            parts = [{"type": "text", "text": message.content}] if message.content else []
            return {"role": "user", "content": [*parts, *(image_part(i) for i in message.images)]}
        return {"role": "user", "content": message.content}
    if isinstance(message, ToolResultMessage):
        return {"role": "tool", "tool_call_id": message.call_id, "content": message.content}
    # Always a string, "" for a reply that is only tool calls: llama-cpp-python's server refuses
    # ``null`` (its request schema says str) and fails on a missing key (its chatml-function-calling
    # template reads ``message.content``: HTTP 500), while OpenAI and the others accept "".
    out: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        # A call whose arguments did not parse is replayed as "{}": servers that re-parse history
        # reject invalid JSON, and the paired error result already shows the model its raw text.
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
            }
            for call in message.tool_calls
        ]
    return out


def image_part(image: ImagePart) -> dict[str, Any]:
    """A chat-completions ``image_url`` content part carrying the image as a ``data:`` URL."""
    return {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{image.base64()}"}}


def tool_images_message(results: list[ToolResultMessage]) -> dict[str, Any] | None:
    """The user message that carries the images of consecutive tool results, or None."""
    parts: list[dict[str, Any]] = []
    for result in results:
        if result.images:
            count = len(result.images)
            what = "The image" if count == 1 else f"The {count} images"
            label = f"{what} returned by tool call {result.call_id} ({result.name}):"
            parts.append({"type": "text", "text": label})
            parts.extend(image_part(i) for i in result.images)
    return {"role": "user", "content": parts} if parts else None


def build_body(request: ModelRequest, settings: OpenAISettings, *, cache: bool = True) -> dict[str, Any]:
    """The JSON body of a streaming chat-completions call; ``extra_body`` (table, then model) last.

    ``cache`` False leaves out every prompt-cache field (a server refused them)."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    results: list[ToolResultMessage] = []  # the run of tool messages being written
    for message in request.messages:
        # The loop never sends failed replies; checking again costs nothing and protects the API.
        if isinstance(message, AssistantMessage) and not message.replayable:
            continue
        if not isinstance(message, ToolResultMessage) and (carried := tool_images_message(results)):
            messages.append(carried)
        results = [*results, message] if isinstance(message, ToolResultMessage) else []
        messages.append(message_to_openai(message))
    if carried := tool_images_message(results):
        messages.append(carried)
    body: dict[str, Any] = {"model": request.model, "messages": messages, "stream": True}
    if settings.include_usage:
        body["stream_options"] = {"include_usage": True}
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in request.tools
        ]
    if request.max_tokens is not None:
        body[settings.max_tokens_field] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if level := request.options.get("thinking"):
        body.update(thinking_fields(request.model, str(level), settings))
    if output := request.options.get("output_schema"):
        # A typed run (crab.Agent(output_type=...)): the answer is JSON matching the schema. Not
        # "strict", which would refuse optional fields; crab validates the answer itself.
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": output["name"], "schema": output["schema"], "strict": False},
        }
    if cache and settings.sends_cache_key() and (key := prompt_cache_key(request.session_id)):
        body["prompt_cache_key"] = key
    if cache and settings.marks_cache(request.model):
        place_gateway_marks(messages, body.get("tools") or [], MIN_CACHE_TOKENS)
    extra = EXTRA_BODY.for_request(settings.extra_body_for(request.model), bool(request.tools))
    return merge_tables(body, extra) if extra else body


REASONING_MODELS = ("o1", "o3", "o4", "gpt-5")
"""Model id prefixes of OpenAI's reasoning models, which take ``reasoning_effort``."""


def reasons(model: str) -> bool:
    """Whether ``model`` (an OpenAI id, or a gateway's ``openai/...`` one) takes ``reasoning_effort``."""
    return model.rsplit("/", 1)[-1].startswith(REASONING_MODELS)


def thinks(model: str, settings: OpenAISettings) -> bool:
    """Whether crab's ``thinking`` level reaches ``model``: a reasoning model, or any model of a
    server that is not OpenAI's (the ``enable_thinking`` switch local servers' chat templates read)."""
    return reasons(model) or not settings.is_openai


def thinking_fields(model: str, level: str, settings: OpenAISettings) -> dict[str, Any]:
    """The body fields for crab's ``thinking`` level: ``reasoning_effort`` for a reasoning model
    ("off" is ``minimal`` for gpt-5, left to the model's default for the o-series, which cannot stop
    reasoning); ``chat_template_kwargs.enable_thinking`` on other servers (llama.cpp, vLLM, SGLang:
    Qwen3-style templates); nothing for a model of OpenAI's that does not reason."""
    if reasons(model):
        if level != "off":
            return {"reasoning_effort": level}
        return {"reasoning_effort": "minimal"} if model.rsplit("/", 1)[-1].startswith("gpt-5") else {}
    if not settings.is_openai:
        return {"chat_template_kwargs": {"enable_thinking": level != "off"}}
    return {}


def build_headers(key: str | None, settings: OpenAISettings) -> dict[str, str]:
    headers = {"content-type": "application/json", "accept": "text/event-stream", **settings.http.headers}
    if key:
        headers["authorization"] = f"Bearer {key}"
    return headers


def endpoint(settings: OpenAISettings) -> str:
    return f"{settings.http.base_url}/chat/completions"
