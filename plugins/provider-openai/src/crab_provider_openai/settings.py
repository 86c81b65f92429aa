"""The ``[plugins.provider-openai]`` config table: its declaration, its typed reading, the models it knows.

Core checks the top-level keys against ``TABLE`` (and runs ``check_table`` for the nested
``endpoints`` and ``models`` tables) before anything runs, and drops key routing an untrusted
project sets (``trust_filter``).

Built-in context windows and prices apply only when ``base_url`` is OpenAI's own (another server
bills its own way); a ``models."<id>"`` entry overrides any of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from crab import ConfigTable, InvalidValue, ModelInfo, Setting
from crab.config import PluginTable
from crab_provider_kit import (
    EXTRA_KEY,
    HttpOptions,
    extra_body_paths,
    http_settings,
    key_routing,
    merge_tables,
    read_http_options,
)

from crab_provider_openai.extra import EXTRA_BODY

PLUGIN = "provider-openai"
PROVIDER = "openai"
OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"

# (context window, max output tokens) as OpenAI documents them.
KNOWN_MODELS: dict[str, tuple[int, int]] = {
    "gpt-5": (400_000, 128_000),
    "gpt-5-mini": (400_000, 128_000),
    "gpt-5-nano": (400_000, 128_000),
    "gpt-4.1": (1_047_576, 32_768),
    "gpt-4.1-mini": (1_047_576, 32_768),
    "gpt-4.1-nano": (1_047_576, 32_768),
    "gpt-4o": (128_000, 16_384),
    "gpt-4o-mini": (128_000, 16_384),
    "o3": (200_000, 100_000),
    "o4-mini": (200_000, 100_000),
}
"""OpenAI's models crab knows, every one of them reading images (``ModelInfo.vision``)."""
PRICES: dict[str, tuple[float, float, float]] = {
    "gpt-5": (1.25, 0.125, 10.0),
    "gpt-5-mini": (0.25, 0.025, 2.0),
    "gpt-5-nano": (0.05, 0.005, 0.4),
    "gpt-4.1": (2.0, 0.5, 8.0),
    "gpt-4.1-mini": (0.4, 0.1, 1.6),
    "gpt-4.1-nano": (0.1, 0.025, 0.4),
    "gpt-4o": (2.5, 1.25, 10.0),
    "gpt-4o-mini": (0.15, 0.075, 0.6),
    "o3": (2.0, 0.5, 8.0),
    "o4-mini": (1.1, 0.275, 4.4),
    "o3-mini": (1.1, 0.55, 4.4),
    "gpt-3.5-turbo": (0.5, 0.5, 1.5),
}
"""(input, cached input, output) US dollars per million tokens, from OpenAI's pricing page
(https://platform.openai.com/docs/pricing, standard tier). OpenAI charges nothing extra for
writing its cache, so a cache write costs the input price."""
TEXT_ONLY_MODELS: dict[str, tuple[int, int]] = {
    "o3-mini": (200_000, 100_000),
    "gpt-3.5-turbo": (16_385, 4_096),
}
"""OpenAI's models that read no images, as OpenAI documents them: a request with images to one is
refused in one line before it is sent. Any other model may set ``vision`` in its models table."""


@dataclass(frozen=True)
class OpenAISettings:
    """Everything the provider reads from its config table, with defaults."""

    http: HttpOptions = field(default_factory=lambda: HttpOptions(OPENAI_BASE_URL, DEFAULT_KEY_ENV))
    models: Mapping[str, ModelInfo] = field(default_factory=dict)
    include_usage: bool = True
    max_tokens_field: str = "max_tokens"
    think_tags: bool = True
    provider: str = PROVIDER
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    model_extra_body: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    cache_key: bool | None = None
    """Send ``prompt_cache_key``; None: only to OpenAI's own URL."""
    cache_control: bool | None = None
    """Mark content parts with ``cache_control`` for a gateway fronting Claude; None: when the
    model's id names Claude and the server is not OpenAI's."""

    @property
    def is_openai(self) -> bool:
        return self.http.base_url.rstrip("/") == OPENAI_BASE_URL

    def sends_cache_key(self) -> bool:
        return self.is_openai if self.cache_key is None else self.cache_key

    def marks_cache(self, model: str) -> bool:
        if self.cache_control is not None:
            return self.cache_control
        return not self.is_openai and "claude" in model.lower()

    def model_info(self, model: str) -> ModelInfo | None:
        return self.models.get(model)

    def extra_body_for(self, model: str) -> dict[str, Any]:
        """The table's ``extra_body`` with the model's own laid on top (the model's wins)."""
        return merge_tables(self.extra_body, self.model_extra_body.get(model, {}))

    @property
    def table(self) -> str:
        """Where this provider's table lives under ``[plugins]``, for messages."""
        return table_path(self.provider)


ENDPOINTS = "endpoints"
_ENDPOINT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


def table_path(provider: str) -> str:
    """Where a provider's table lives under ``[plugins]``: the plugin's own, or one endpoint's."""
    return PLUGIN if provider == PROVIDER else f"{PLUGIN}.{ENDPOINTS}.{provider}"


def _key(provider: str, *parts: str) -> tuple[str, ...]:
    return ("plugins", *table_path(provider).split("."), *parts)


def endpoint_tables(table: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """``[plugins.provider-openai.endpoints.<name>]`` tables: one more provider each, named ``<name>``.

    Raises ``InvalidValue`` for a table that is not one, or a name a ``--model name/model`` flag
    could not address.
    """
    endpoints = table.get(ENDPOINTS, {})
    if not isinstance(endpoints, Mapping):
        raise InvalidValue(_key(PROVIDER, ENDPOINTS), "a table of endpoint name to settings", endpoints)
    found: dict[str, Mapping[str, Any]] = {}
    for name, entry in endpoints.items():
        if not isinstance(name, str) or not _ENDPOINT_NAME.match(name) or name == PROVIDER:
            raise InvalidValue(
                _key(PROVIDER, ENDPOINTS),
                f"endpoint names of lower-case letters, digits, '-' and '_', not {PROVIDER!r}",
                name,
            )
        if not isinstance(entry, Mapping):
            raise InvalidValue(_key(PROVIDER, ENDPOINTS, name), "a table with at least base_url", entry)
        found[name] = entry
    return found


def check_table(values: Mapping[str, Any]) -> None:
    """The whole table, nested tables included, as the providers will read it; raises ``InvalidValue``."""
    parse_settings({k: v for k, v in values.items() if k != ENDPOINTS})
    for name, entry in endpoint_tables(values).items():
        parse_settings(entry, name)


ENDPOINT_TRUST_ONLY = ("base_url", "api_key_env", "cache_key", "cache_control")
"""An endpoint's keys a project may not set (its nested table has no ``Setting``s of its own)."""


def trust_filter(project: Mapping[str, Any], trusted: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """Key routing an untrusted project may not set: ``base_url`` with a key (``key_routing``), and
    in an endpoint, ``api_key_env`` and ``base_url`` (an endpoint always looks up ``<NAME>_API_KEY``)
    and the cache keys, trust-only in the main table too; every ``extra_body``
    (``extra_body_paths``). An endpoint the user's layers give no ``base_url`` is dropped whole."""
    drops = key_routing(project, trusted) + extra_body_paths(project)
    endpoints = project.get(ENDPOINTS)
    known = trusted.get(ENDPOINTS)
    known = known if isinstance(known, Mapping) else {}
    if isinstance(endpoints, Mapping):
        for name, entry in endpoints.items():
            if not isinstance(entry, Mapping):
                continue
            own = known.get(name)
            if not (isinstance(own, Mapping) and "base_url" in own):
                drops.append((ENDPOINTS, name))
                continue
            drops.extend((ENDPOINTS, name, key) for key in ENDPOINT_TRUST_ONLY if key in entry)
            drops.extend((ENDPOINTS, name, *path) for path in extra_body_paths(entry))
    return drops


TABLE = ConfigTable(
    name=PLUGIN,
    doc="OpenAI-compatible chat completions",
    settings=(
        *http_settings(OPENAI_BASE_URL, DEFAULT_KEY_ENV),
        Setting("models", "table", doc='per-model settings: models."<id>" = { context_window, prices… }'),
        Setting(ENDPOINTS, "table", doc="named OpenAI-compatible servers, each a provider of that name"),
        Setting("include_usage", "bool", True, "ask the server for token usage in the stream"),
        Setting("max_tokens_field", "str", doc="request field for the output limit (default by server)"),
        Setting("think_tags", "bool", True, "show <think>…</think> text as thinking"),
        Setting("extra_body", "table", {}, "fields merged into every request body", trust_only=True),
        Setting(
            "cache_key", "bool", doc="send a per-session prompt_cache_key (default: to OpenAI's URL)", trust_only=True
        ),
        Setting(
            "cache_control",
            "bool",
            doc="mark the prompt with cache_control for a gateway fronting Claude (default: a claude model)",
            trust_only=True,
        ),
    ),
    check=check_table,
    trust_filter=trust_filter,
)


def parse_settings(table: Mapping[str, Any], provider: str = PROVIDER) -> OpenAISettings:
    """Check and type a config table; a bad value is a one-line ``ConfigError`` naming the key.

    ``provider`` is ``openai`` for the plugin's own table, else the name of an endpoint, whose
    table must give ``base_url`` and whose key variable defaults to ``<NAME>_API_KEY``.
    """
    read = PluginTable(table_path(provider), table)
    if provider == PROVIDER:
        http = read_http_options(read, default_base_url=OPENAI_BASE_URL, default_key_env=DEFAULT_KEY_ENV)
    else:
        key_env = provider.upper().replace("-", "_") + "_API_KEY"
        http = read_http_options(read, default_base_url=None, default_key_env=key_env)
    is_openai = http.base_url == OPENAI_BASE_URL
    known = (
        {m: known_info(m, provider, w, o) for m, (w, o) in {**KNOWN_MODELS, **TEXT_ONLY_MODELS}.items()}
        if is_openai
        else {}
    )
    models, model_extra_body = EXTRA_BODY.models(
        table.get("models", {}), known, provider=provider, where=_key(provider, "models")
    )
    return OpenAISettings(
        http=http,
        models=models,
        include_usage=read.flag("include_usage", True),
        max_tokens_field=read.text("max_tokens_field", "max_completion_tokens" if is_openai else "max_tokens"),
        think_tags=read.flag("think_tags", True),
        provider=provider,
        extra_body=EXTRA_BODY.read(table.get(EXTRA_KEY, {}), _key(provider, EXTRA_KEY)),
        model_extra_body=model_extra_body,
        cache_key=_optional_flag(read, "cache_key"),
        cache_control=_optional_flag(read, "cache_control"),
    )


def _optional_flag(read: PluginTable, key: str) -> bool | None:
    return read.flag(key, False) if key in read.table else None


def known_info(model: str, provider: str, window: int, output: int) -> ModelInfo:
    """A model OpenAI documents, with its context window, output limit and prices."""
    input_price, cached_price, output_price = PRICES.get(model, (None, None, None))
    return ModelInfo(
        model,
        provider,
        context_window=window,
        max_output_tokens=output,
        input_price=input_price,
        output_price=output_price,
        cache_read_price=cached_price,
        cache_write_price=input_price,
        vision=model in KNOWN_MODELS,
    )
