"""``AnthropicProvider``: the crab ``Provider`` for the Anthropic Messages API."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from crab.auth import known_secrets, lookup_key, missing_key_message
from crab.errors import ConfigError, ProviderError
from crab.events import StreamEvent
from crab.http_stream import HttpCall, stream_call
from crab.providers import ModelInfo, ModelRequest

from crab_provider_anthropic.errors import classify_error, error_details
from crab_provider_anthropic.parser import MessagesStreamParser
from crab_provider_anthropic.request import build_body, build_headers, endpoint
from crab_provider_anthropic.settings import PROVIDER, AnthropicSettings, parse_settings


class AnthropicProvider:
    """Streams Messages API replies from ``base_url``. Cheap to build: no IO until ``stream``.

    A bad config table does not stop crab from starting; it surfaces as a ``ConfigError``
    from ``check`` (one line, exit code 2) when this provider is actually used.
    """

    name = PROVIDER

    def __init__(self, table: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> None:
        self._env = env
        self._settings: AnthropicSettings | None = None
        self._error: ConfigError | None = None
        try:
            self._settings = parse_settings(table or {})
        except ConfigError as exc:
            self._error = exc

    @property
    def settings(self) -> AnthropicSettings:
        if self._settings is None:
            assert self._error is not None
            raise self._error
        return self._settings

    def models(self) -> list[ModelInfo]:
        return list(self.settings.models.values())

    def _key(self) -> str | None:
        settings = self.settings
        key: str | None = lookup_key(self.name, settings.api_key_env, env=self._env)
        return key

    def check(self, model: str) -> None:
        settings = self.settings
        if settings.require_key and not self._key():
            raise ConfigError(missing_key_message(self.name, settings.api_key_env))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        settings = self.settings
        key = self._key()
        if settings.require_key and not key:
            raise ProviderError(missing_key_message(self.name, settings.api_key_env), "auth")
        model = request.model
        secrets = tuple(s for s in (key, *known_secrets(env=self._env)) if s)
        call = HttpCall(
            provider=self.name,
            url=endpoint(settings),
            headers=build_headers(key, settings),
            body=json.dumps(build_body(request, settings), ensure_ascii=False).encode("utf-8"),
            policy=settings.policy,
            idle_timeout=settings.idle_timeout,
            connect_timeout=settings.connect_timeout,
            secrets=secrets,
        )

        def classify(status: int, body: str) -> ProviderError:
            message, error_type = error_details(body)
            return classify_error(
                status, message, error_type, provider=self.name, model=model, key_env=settings.api_key_env
            )

        def make_parser() -> MessagesStreamParser:
            return MessagesStreamParser(
                model,
                provider=self.name,
                info=settings.model_info(model),
                cache_write_price=settings.cache_write_prices.get(model),
                key_env=settings.api_key_env,
            )

        async for event in stream_call(call, make_parser, classify):
            yield event
