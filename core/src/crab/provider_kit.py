"""The provider kit: what a model-provider plugin needs besides the types in ``crab``.

Streamed HTTP with retries and redaction (``stream_call``, ``HttpOptions``), Server-Sent Events
(``ServerSentEvent``, ``SSEDecoder``), retry classification (``status_kind``,
``is_retryable_status``, ``RetryPolicy``), pricing (``with_cost``, ``usage_cost``), per-model
config tables (``model_from_table``), tool-argument parsing and API keys (``lookup_key``,
``missing_key_message``). This module only re-exports; the implementations stay in their private
modules. Part of the public API (docs/api.md), covered by ``crab.API_VERSION``. Names are imported
on first use, so importing the kit does not load httpx.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crab.auth import lookup_key, missing_key_message
    from crab.http_stream import HttpCall, HttpOptions, StreamParser, read_http_options, stream_call
    from crab.messages import parse_tool_arguments
    from crab.pricing import usage_cost, with_cost
    from crab.providers import model_from_table
    from crab.retry import (
        RetryPolicy,
        is_retryable_status,
        parse_retry_after,
        retry_after_from_headers,
        status_kind,
    )
    from crab.sse import ServerSentEvent, SSEDecoder

_EXPORTS: dict[str, str] = {
    "HttpCall": "crab.http_stream",
    "HttpOptions": "crab.http_stream",
    "StreamParser": "crab.http_stream",
    "read_http_options": "crab.http_stream",
    "stream_call": "crab.http_stream",
    "ServerSentEvent": "crab.sse",
    "SSEDecoder": "crab.sse",
    "RetryPolicy": "crab.retry",
    "is_retryable_status": "crab.retry",
    "parse_retry_after": "crab.retry",
    "retry_after_from_headers": "crab.retry",
    "status_kind": "crab.retry",
    "usage_cost": "crab.pricing",
    "with_cost": "crab.pricing",
    "model_from_table": "crab.providers",
    "parse_tool_arguments": "crab.messages",
    "lookup_key": "crab.auth",
    "missing_key_message": "crab.auth",
}

__all__ = [
    "HttpCall",
    "HttpOptions",
    "RetryPolicy",
    "SSEDecoder",
    "ServerSentEvent",
    "StreamParser",
    "is_retryable_status",
    "lookup_key",
    "missing_key_message",
    "model_from_table",
    "parse_retry_after",
    "parse_tool_arguments",
    "read_http_options",
    "retry_after_from_headers",
    "status_kind",
    "stream_call",
    "usage_cost",
    "with_cost",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'crab.provider_kit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
