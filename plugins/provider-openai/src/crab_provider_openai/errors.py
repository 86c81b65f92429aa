"""Turns an OpenAI-compatible error (HTTP status plus body, or an ``error`` object inside the
stream) into a typed ``ProviderError`` whose one-line message says what to do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from crab import ContextOverflowError, ProviderError
from crab.events import ErrorKind
from crab_provider_kit import is_retryable_status, status_kind

# Servers word this differently; these cover OpenAI, DeepSeek, Kimi, OpenRouter, vLLM, llama.cpp, Ollama.
_OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "exceeds the available context size",
    "prompt is too long",
    "input is too long",
    "too many tokens",
)
_UNKNOWN_MODEL_MARKERS = ("model_not_found", "does not exist", "not found", "unknown model", "no such model")

MAX_MESSAGE = 300


def error_details(body: str) -> tuple[str, str]:
    """``(message, code)`` from an error body: ``{"error": {"message", "code", "type"}}`` or text."""
    try:
        data: Any = json.loads(body)
    except ValueError:
        return body.strip()[:MAX_MESSAGE], ""
    return details_from_object(data)


def details_from_object(data: Any) -> tuple[str, str]:
    error = data.get("error", data) if isinstance(data, Mapping) else data
    if isinstance(error, Mapping):
        message = str(error.get("message") or error.get("detail") or "").strip()
        code = str(error.get("code") or error.get("type") or "")
        return message[:MAX_MESSAGE], code
    return str(error).strip()[:MAX_MESSAGE], ""


def key_advice(key_env: str, key_table: str) -> str:
    """What to set for a key: its variable, or, when the table names none, ``api_key_env`` itself.

    A custom ``base_url`` that names no ``api_key_env`` is sent no key at all (crab never routes
    the vendor's key to another host), so a 401 there means the table must name one.
    """
    if key_env:
        return f"set {key_env} to a valid key"
    return f"set api_key_env in [plugins.{key_table}] to the variable that holds the server's key"


def classify_error(
    status: int | None,
    message: str,
    code: str,
    *,
    provider: str,
    model: str,
    key_env: str,
    key_table: str = "provider-openai",
) -> ProviderError:
    """The typed error for a failed call; ``status`` is ``None`` for an error inside a stream.

    ``key_table`` is the config table the provider reads (``provider-openai`` or
    ``provider-openai.endpoints.<name>``), named when there is no key variable to point at.
    """
    said = message or (f"HTTP {status}" if status else "no details")
    lowered = f"{code} {message}".lower()
    if status == 413 or any(marker in lowered for marker in _OVERFLOW_MARKERS):
        return ContextOverflowError(f"{provider}: the conversation does not fit {model}'s context window: {said}")
    if status == 401:
        if not key_env:
            return ProviderError(
                f"{provider}: the server wants an API key (401) and none was sent: {key_advice(key_env, key_table)}",
                "auth",
            )
        return ProviderError(
            f"{provider}: the server rejected the API key (401): {key_advice(key_env, key_table)}", "auth"
        )
    if status == 403:
        check = f"check the key in {key_env}" if key_env else key_advice(key_env, key_table)
        return ProviderError(f"{provider}: access denied (403): {said}; {check}", "auth")
    if status in (400, 404) and "model" in lowered and any(m in lowered for m in _UNKNOWN_MODEL_MARKERS):
        return ProviderError(
            f"{provider}: unknown model {model!r}: {said} (see `crab models`, or set the model id the server uses)",
            "model_not_found",
        )
    if status == 404:
        return ProviderError(f"{provider}: not found (404): {said}; check base_url", "invalid_request")
    if status == 429 and "insufficient_quota" in lowered:
        # Retrying cannot help an exhausted quota; say so at once.
        return ProviderError(f"{provider}: quota exhausted (429): {said}", "rate_limit", retryable=False)
    if status is None:
        kind: ErrorKind = "overloaded" if "overload" in lowered else "rate_limit" if "rate" in lowered else "server"
        return ProviderError(f"{provider}: the server reported an error mid-stream: {said}", kind, retryable=True)
    return ProviderError(
        f"{provider}: HTTP {status}: {said}", status_kind(status), retryable=is_retryable_status(status)
    )
