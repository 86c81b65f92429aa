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

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crab._contracts.messages import json_text, parse_tool_arguments, unique_id
    from crab._contracts.providers import model_from_table
    from crab._loop.pricing import usage_cost, with_cost
    from crab._secrets.keys import lookup_key, missing_key_message
    from crab.extra_body import KEY as EXTRA_KEY
    from crab.extra_body import ExtraBody
    from crab.extra_body import merge as merge_tables
    from crab.http_stream import (
        DEFAULT_REQUEST_TIMEOUT,
        HttpCall,
        HttpOptions,
        StreamParser,
        extra_body_paths,
        http_settings,
        key_routing,
        read_http_options,
        request_timeout_from,
        stream_call,
    )
    from crab.retry import (
        RetryPolicy,
        is_retryable_status,
        parse_retry_after,
        retry_after_from_headers,
        status_kind,
    )
    from crab.sse import ServerSentEvent, SSEDecoder

_EXPORTS: dict[str, str] = {  # public name → ``module`` (same name there) or ``module:attribute``
    "HttpCall": "crab.http_stream",
    "ExtraBody": "crab.extra_body",
    "EXTRA_KEY": "crab.extra_body:KEY",
    "merge_tables": "crab.extra_body:merge",
    "unique_id": "crab._contracts.messages",
    "HttpOptions": "crab.http_stream",
    "StreamParser": "crab.http_stream",
    "read_http_options": "crab.http_stream",
    "stream_call": "crab.http_stream",
    "DEFAULT_REQUEST_TIMEOUT": "crab.http_stream",
    "extra_body_paths": "crab.http_stream",
    "http_settings": "crab.http_stream",
    "key_routing": "crab.http_stream",
    "request_timeout_from": "crab.http_stream",
    "json_text": "crab._contracts.messages",
    "ServerSentEvent": "crab.sse",
    "SSEDecoder": "crab.sse",
    "RetryPolicy": "crab.retry",
    "is_retryable_status": "crab.retry",
    "parse_retry_after": "crab.retry",
    "retry_after_from_headers": "crab.retry",
    "status_kind": "crab.retry",
    "usage_cost": "crab._loop.pricing",
    "with_cost": "crab._loop.pricing",
    "model_from_table": "crab._contracts.providers",
    "parse_tool_arguments": "crab._contracts.messages",
    "lookup_key": "crab._secrets.keys",
    "missing_key_message": "crab._secrets.keys",
}

__all__ = [
    "DEFAULT_REQUEST_TIMEOUT",
    "EXTRA_KEY",
    "ExtraBody",
    "HttpCall",
    "HttpOptions",
    "RetryPolicy",
    "SSEDecoder",
    "ServerSentEvent",
    "StreamParser",
    "extra_body_paths",
    "http_settings",
    "is_retryable_status",
    "json_text",
    "key_routing",
    "lookup_key",
    "merge_tables",
    "missing_key_message",
    "model_from_table",
    "parse_retry_after",
    "parse_tool_arguments",
    "read_http_options",
    "request_timeout_from",
    "retry_after_from_headers",
    "status_kind",
    "stream_call",
    "unique_id",
    "usage_cost",
    "with_cost",
]


def __getattr__(name: str) -> Any:
    from crab import _lazy_export

    return _lazy_export(_EXPORTS, globals(), "crab.provider_kit", name)


def __dir__() -> list[str]:
    return sorted(__all__)
