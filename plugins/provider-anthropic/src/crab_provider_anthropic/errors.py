"""Turns an Anthropic error (HTTP status plus ``{"type": "error", "error": {...}}`` body, or an
``error`` event inside the stream) into a typed ``ProviderError`` whose message says what to do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from crab import ContextOverflowError, ProviderError
from crab.events import ErrorKind
from crab_provider_kit import is_retryable_status, status_kind

_OVERFLOW_MARKERS = ("prompt is too long", "exceed context limit", "context window", "request_too_large", "too large")

# Error types Anthropic documents, and what each means to the loop.
_TYPE_KINDS: dict[str, tuple[ErrorKind, bool]] = {
    "overloaded_error": ("overloaded", True),
    "api_error": ("server", True),
    "rate_limit_error": ("rate_limit", True),
    "timeout_error": ("network", True),
    "authentication_error": ("auth", False),
    "permission_error": ("auth", False),
    "not_found_error": ("model_not_found", False),
    "invalid_request_error": ("invalid_request", False),
}

MAX_MESSAGE = 300


def error_details(body: str) -> tuple[str, str]:
    """``(message, error type)`` from an error body, or its text when it is not JSON."""
    try:
        data: Any = json.loads(body)
    except ValueError:
        return body.strip()[:MAX_MESSAGE], ""
    return details_from_object(data)


def details_from_object(data: Any) -> tuple[str, str]:
    error = data.get("error", data) if isinstance(data, Mapping) else data
    if isinstance(error, Mapping):
        return str(error.get("message") or "").strip()[:MAX_MESSAGE], str(error.get("type") or "")
    return str(error).strip()[:MAX_MESSAGE], ""


def key_advice(key_env: str) -> str:
    """What to set for a key: its variable, or, when the table names none, ``api_key_env`` itself.

    A custom ``base_url`` (a proxy) that names no ``api_key_env`` is sent no key at all: crab
    never routes the Anthropic key to another host, so a 401 there means the table must name one.
    """
    if key_env:
        return f"set {key_env} to a valid key"
    return "set api_key_env in [plugins.provider-anthropic] to the variable that holds the server's key"


def classify_error(
    status: int | None, message: str, error_type: str, *, provider: str, model: str, key_env: str
) -> ProviderError:
    """The typed error for a failed call; ``status`` is ``None`` for an error event in a stream."""
    said = message or error_type or (f"HTTP {status}" if status else "no details")
    lowered = f"{error_type} {message}".lower()
    if status in (400, 413, None) and any(marker in lowered for marker in _OVERFLOW_MARKERS):
        return ContextOverflowError(f"{provider}: the conversation does not fit {model}'s context window: {said}")
    if status == 401 or error_type == "authentication_error":
        if not key_env:
            return ProviderError(
                f"{provider}: the server wants an API key (401) and none was sent: {key_advice(key_env)}", "auth"
            )
        return ProviderError(f"{provider}: the server rejected the API key (401): {key_advice(key_env)}", "auth")
    if status == 403 or error_type == "permission_error":
        check = f"check the key in {key_env}" if key_env else key_advice(key_env)
        return ProviderError(f"{provider}: access denied (403): {said}; {check}", "auth")
    if status == 404 or error_type == "not_found_error":
        if "model" in lowered:
            return ProviderError(
                f"{provider}: unknown model {model!r}: {said} (see `crab models`, or use a model id Anthropic lists)",
                "model_not_found",
            )
        return ProviderError(f"{provider}: not found (404): {said}; check base_url", "invalid_request")
    if error_type in _TYPE_KINDS:
        kind, retryable = _TYPE_KINDS[error_type]
    elif status is None:
        kind, retryable = "server", True
    else:
        kind, retryable = status_kind(status), is_retryable_status(status)
    where = "mid-stream" if status is None else f"HTTP {status}"
    return ProviderError(f"{provider}: {where}: {said}", kind, retryable=retryable)
