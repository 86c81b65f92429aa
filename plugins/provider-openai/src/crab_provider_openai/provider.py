"""``OpenAIProvider``: the crab ``Provider`` for OpenAI-compatible chat-completions servers."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

from crab import Config, ConfigError, ModelInfo, ModelRequest, Provider, ProviderError
from crab.events import StreamEvent
from crab_provider_kit import (
    DEFAULT_REQUEST_TIMEOUT,
    CacheFallback,
    json_text,
    refuse_images_without_vision,
    request_timeout_from,
    stream_call,
)

from crab_provider_openai.errors import classify_error, error_details
from crab_provider_openai.extra import EXTRA_BODY
from crab_provider_openai.parser import ChatStreamParser
from crab_provider_openai.request import build_body, build_headers, endpoint
from crab_provider_openai.settings import (
    ENDPOINTS,
    PLUGIN,
    PROVIDER,
    OpenAISettings,
    endpoint_tables,
    parse_settings,
)


class OpenAIProvider:
    """Streams chat completions from ``base_url``. Cheap to build: no IO until ``stream``.

    A bad config table does not stop crab from starting; it surfaces as a ``ConfigError``
    from ``check`` (one line, exit code 2) when this provider is actually used.

    A server that answers the prompt-cache fields (``prompt_cache_key``, ``cache_control``) with a
    400 naming them gets the request again without them, once, with one ``RetryEvent``; that
    session (``ModelRequest.session_id``) is then sent none for as long as this provider lives.

    ``structured_output``: a typed run's schema (``options["output_schema"]``) goes as
    ``response_format`` (json_schema), which OpenAI and the common local servers honour.
    """

    structured_output = True

    def __init__(
        self,
        table: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        name: str = PROVIDER,
        config_error: ConfigError | None = None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    ) -> None:
        self.name = name
        self._env = env
        self._request_timeout = request_timeout  # [crab] request_timeout; the table's own wins
        self._settings: OpenAISettings | None = None
        self._error: ConfigError | None = config_error
        self._cache_fallback = CacheFallback()
        if config_error is None:
            try:
                self._settings = parse_settings(table or {}, name)
            except ConfigError as exc:
                self._error = exc

    @property
    def settings(self) -> OpenAISettings:
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

    def check(self, model: str) -> None:
        self.settings.http.key_for(self.name, self._env)

    def thinks(self, model: str) -> bool:
        """Whether crab's ``thinking`` level reaches ``model`` (``request.thinking_fields``)."""
        from crab_provider_openai.request import thinks

        return self._settings is not None and thinks(model, self._settings)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        settings = self.settings

        def send(cache: bool) -> AsyncGenerator[StreamEvent, None]:
            return self._stream(request, cache)

        turn_off = f"set cache_key = false and cache_control = false in [plugins.{settings.table}]"
        enabled = settings.sends_cache_key() or settings.marks_cache(request.model)
        async for event in self._cache_fallback.stream(request.session_id, enabled, send, turn_off=turn_off):
            yield event

    async def _stream(self, request: ModelRequest, cache: bool) -> AsyncGenerator[StreamEvent, None]:
        settings = self.settings
        http = settings.http
        try:
            key = http.key_for(self.name, self._env)
        except ConfigError as exc:
            raise ProviderError(str(exc), "auth") from None
        model = request.model
        refuse_images_without_vision(request, settings.model_info(model), settings.table)
        payload = json_text(build_body(request, settings, cache=cache)).encode("utf-8")  # valid UTF-8 always
        headers = build_headers(key, settings)
        call = http.call(self.name, endpoint(settings), headers, payload, key, self._env, self._request_timeout)

        def classify(status: int, body: str) -> ProviderError:
            message, code = error_details(body)
            return classify_error(
                status,
                message,
                code,
                provider=self.name,
                model=model,
                key_env=http.api_key_env,
                key_table=settings.table,
            )

        def make_parser() -> ChatStreamParser:
            return ChatStreamParser(
                model,
                provider=self.name,
                key_env=http.api_key_env,
                think_tags=settings.think_tags,
                key_table=settings.table,
            )

        async for event in stream_call(call, make_parser, classify):
            yield event


def providers_from_config(config: Config) -> list[Provider]:
    """The plugin's own ``openai`` provider and one per named endpoint (``deepseek``, ``local``…).

    A malformed ``endpoints`` table is held by the ``openai`` provider and raised when it is used,
    like any other config error, so crab still starts.
    """
    table = config.plugin_settings(PLUGIN)
    main_table = {k: v for k, v in table.items() if k != ENDPOINTS}
    deadline = request_timeout_from(config)
    try:
        endpoints = endpoint_tables(table)
    except ConfigError as exc:
        return [OpenAIProvider(main_table, config_error=exc, request_timeout=deadline)]
    return [
        OpenAIProvider(main_table, request_timeout=deadline),
        *(OpenAIProvider(t, name=n, request_timeout=deadline) for n, t in endpoints.items()),
    ]
