"""crab-provider-kit: what a model-provider plugin needs besides the types in ``crab``.

Streamed HTTP with retries and redaction (``stream_call``, ``HttpOptions``), Server-Sent Events
(``ServerSentEvent``, ``SSEDecoder``), retry classification (``status_kind``,
``is_retryable_status``, ``RetryPolicy``), a provider's ``extra_body`` rules (``ExtraBody``) and
its config table's connection keys (``http_settings``, ``read_http_options``, ``key_routing``),
and prompt caching's shared parts (``estimate_tokens``, ``CacheFallback`` for a server that
refuses cache fields, ``rejects_cache_fields``).
Per-model config tables (``model_from_table``) are its own too, and so is ``ProviderContract``,
the pytest suite of faults and key leaks an HTTP provider's tests subclass (it imports pytest, so
only a test that names it loads it). For convenience it also re-exports
the ``crab`` names providers use most: pricing (``with_cost``, ``usage_cost``), tool-argument parsing and ids
(``parse_tool_arguments``, ``unique_id``, ``json_text``) and API keys (``lookup_key``,
``missing_key_message``). A kit, not a plugin: no entry point; provider plugins depend on it.
It imports only crab's public API (it was ``crab.provider_kit`` once; that path is gone). Names
are imported on first use, so importing the kit does not load httpx.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crab.messages import json_text, parse_tool_arguments, unique_id, usage_cost, with_cost
    from crab.secrets import lookup_key, missing_key_message

    from crab_provider_kit._contract import ProviderContract
    from crab_provider_kit._extra_body import KEY as EXTRA_KEY
    from crab_provider_kit._extra_body import ExtraBody
    from crab_provider_kit._extra_body import merge as merge_tables
    from crab_provider_kit._http_stream import (
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
    from crab_provider_kit._models import model_from_table, refuse_images_without_vision
    from crab_provider_kit._prompt_cache import CacheFallback, estimate_tokens, rejects_cache_fields
    from crab_provider_kit._retry import (
        RetryPolicy,
        is_retryable_status,
        parse_retry_after,
        retry_after_from_headers,
        status_kind,
    )
    from crab_provider_kit._sse import ServerSentEvent, SSEDecoder

_HTTP = "crab_provider_kit._http_stream"
_RETRY = "crab_provider_kit._retry"
_EXTRA = "crab_provider_kit._extra_body"
_EXPORTS: dict[str, str] = {  # public name → ``module`` (same name there) or ``module:attribute``
    "HttpCall": _HTTP,
    "HttpOptions": _HTTP,
    "StreamParser": _HTTP,
    "read_http_options": _HTTP,
    "stream_call": _HTTP,
    "DEFAULT_REQUEST_TIMEOUT": _HTTP,
    "extra_body_paths": _HTTP,
    "http_settings": _HTTP,
    "key_routing": _HTTP,
    "request_timeout_from": _HTTP,
    "ProviderContract": "crab_provider_kit._contract",
    "CacheFallback": "crab_provider_kit._prompt_cache",
    "estimate_tokens": "crab_provider_kit._prompt_cache",
    "rejects_cache_fields": "crab_provider_kit._prompt_cache",
    "ExtraBody": _EXTRA,
    "EXTRA_KEY": f"{_EXTRA}:KEY",
    "merge_tables": f"{_EXTRA}:merge",
    "ServerSentEvent": "crab_provider_kit._sse",
    "SSEDecoder": "crab_provider_kit._sse",
    "RetryPolicy": _RETRY,
    "is_retryable_status": _RETRY,
    "parse_retry_after": _RETRY,
    "retry_after_from_headers": _RETRY,
    "status_kind": _RETRY,
    "json_text": "crab.messages",
    "unique_id": "crab.messages",
    "parse_tool_arguments": "crab.messages",
    "model_from_table": "crab_provider_kit._models",
    "refuse_images_without_vision": "crab_provider_kit._models",
    "usage_cost": "crab.messages",
    "with_cost": "crab.messages",
    "lookup_key": "crab.secrets",
    "missing_key_message": "crab.secrets",
}

__all__ = [
    "DEFAULT_REQUEST_TIMEOUT",
    "EXTRA_KEY",
    "CacheFallback",
    "ExtraBody",
    "HttpCall",
    "HttpOptions",
    "ProviderContract",
    "RetryPolicy",
    "SSEDecoder",
    "ServerSentEvent",
    "StreamParser",
    "estimate_tokens",
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
    "refuse_images_without_vision",
    "rejects_cache_fields",
    "request_timeout_from",
    "retry_after_from_headers",
    "status_kind",
    "stream_call",
    "unique_id",
    "usage_cost",
    "with_cost",
]


def __getattr__(name: str) -> Any:
    """Import public ``name`` on first use (PEP 562) and keep it in this module's namespace."""
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'crab_provider_kit' has no attribute {name!r}")
    module, _, attribute = target.partition(":")
    value = getattr(importlib.import_module(module), attribute or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
