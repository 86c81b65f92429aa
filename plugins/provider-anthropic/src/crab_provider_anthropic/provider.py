"""``AnthropicProvider``: the crab ``Provider`` for the Anthropic Messages API."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

from crab import ConfigError, ModelInfo, ModelRequest, ProviderError
from crab.events import StreamEvent
from crab_provider_kit import (
    DEFAULT_REQUEST_TIMEOUT,
    CacheFallback,
    json_text,
    refuse_images_without_vision,
    stream_call,
)

from crab_provider_anthropic.errors import classify_error, error_details
from crab_provider_anthropic.extra import EXTRA_BODY
from crab_provider_anthropic.parser import MessagesStreamParser
from crab_provider_anthropic.request import build_body, build_headers, endpoint
from crab_provider_anthropic.settings import PLUGIN, PROVIDER, AnthropicSettings, parse_settings


class AnthropicProvider:
    """Streams Messages API replies from ``base_url``. Cheap to build: no IO until ``stream``.

    A bad config table does not stop crab from starting; it surfaces as a ``ConfigError``
    from ``check`` (one line, exit code 2) when this provider is actually used.

    A server that answers the prompt-cache marks with a 400 naming them gets the request again
    without them, once, with one ``RetryEvent`` saying so; the session (``ModelRequest.session_id``)
    is then sent none for as long as this provider lives.

    ``structured_output``: a typed run's schema (``options["output_schema"]``) goes as
    ``output_config.format`` (structured outputs), the answer as JSON text.
    """

    name = PROVIDER
    structured_output = True

    def __init__(
        self,
        table: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    ) -> None:
        self._env = env
        self._request_timeout = request_timeout  # [crab] request_timeout; the table's own wins
        self._settings: AnthropicSettings | None = None
        self._error: ConfigError | None = None
        self._cache_fallback = CacheFallback()
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

    def forced_tools(self, request: ModelRequest) -> frozenset[str]:
        """Tools a configured ``tool_choice`` makes the model call: crab sends their full schemas."""
        extra = self.settings.extra_body_for(request.model)
        return EXTRA_BODY.forced_tools(extra, [tool.name for tool in request.tools])

    def thinks(self, model: str) -> bool:
        """Whether crab's ``thinking`` level reaches ``model``: extended thinking (Claude 3.7 and later)."""
        from crab_provider_anthropic.request import thinks

        return thinks(model)

    def check(self, model: str) -> None:
        self.settings.http.key_for(self.name, self._env)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        def send(cache: bool) -> AsyncGenerator[StreamEvent, None]:
            return self._stream(request, cache)

        fallback = self._cache_fallback.stream(
            request.session_id, self.settings.cache, send, turn_off=f"set cache = false in [plugins.{PLUGIN}]"
        )
        async for event in fallback:
            yield event

    async def _stream(self, request: ModelRequest, cache: bool) -> AsyncGenerator[StreamEvent, None]:
        settings = self.settings
        http = settings.http
        try:
            key = http.key_for(self.name, self._env)
        except ConfigError as exc:
            raise ProviderError(str(exc), "auth") from None
        model = request.model
        refuse_images_without_vision(request, settings.model_info(model), PLUGIN)
        payload = json_text(build_body(request, settings, cache=cache)).encode("utf-8")  # valid UTF-8 always
        headers = build_headers(key, settings, cache=cache)
        call = http.call(self.name, endpoint(settings), headers, payload, key, self._env, self._request_timeout)

        def classify(status: int, body: str) -> ProviderError:
            message, error_type = error_details(body)
            return classify_error(
                status, message, error_type, provider=self.name, model=model, key_env=http.api_key_env
            )

        def make_parser() -> MessagesStreamParser:
            return MessagesStreamParser(
                model,
                provider=self.name,
                key_env=http.api_key_env,
            )

        async for event in stream_call(call, make_parser, classify):
            yield event
