"""The ``[plugins.provider-anthropic]`` config table, checked and typed, and the models it knows.

Built-in context windows apply only when ``base_url`` is Anthropic's own; prices always come
from config, because a price list shipped in code is wrong by the time anyone reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from crab import ConfigError, ModelInfo, PluginTable
from crab.provider_kit import HttpOptions, model_from_table, read_http_options

PLUGIN = "provider-anthropic"
PROVIDER = "anthropic"
ANTHROPIC_BASE_URL = "https://api.anthropic.com/v1"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192

# (context window, max output tokens, supports extended thinking) as Anthropic documents them.
KNOWN_MODELS: dict[str, tuple[int, int, bool]] = {
    "claude-opus-4-1": (200_000, 32_000, True),
    "claude-opus-4-0": (200_000, 32_000, True),
    "claude-sonnet-4-5": (200_000, 64_000, True),
    "claude-sonnet-4-0": (200_000, 64_000, True),
    "claude-haiku-4-5": (200_000, 64_000, True),
    "claude-3-7-sonnet-latest": (200_000, 64_000, True),
    "claude-3-5-haiku-latest": (200_000, 8_192, False),
}


@dataclass(frozen=True)
class AnthropicSettings:
    """Everything the provider reads from its config table, with defaults."""

    http: HttpOptions = field(default_factory=lambda: HttpOptions(ANTHROPIC_BASE_URL, DEFAULT_KEY_ENV))
    models: Mapping[str, ModelInfo] = field(default_factory=dict)
    default_max_tokens: int = DEFAULT_MAX_TOKENS
    thinking_budget: int = 0
    provider: str = PROVIDER

    def model_info(self, model: str) -> ModelInfo | None:
        return self.models.get(model)

    @property
    def cache_write_prices(self) -> dict[str, float]:
        """Configured cache-write prices by model id (Anthropic charges for cache writes)."""
        return {m: i.cache_write_price for m, i in self.models.items() if i.cache_write_price is not None}


def _where(key: str) -> str:
    return f"config: plugins.{PLUGIN}.{key}"


def parse_settings(table: Mapping[str, Any]) -> AnthropicSettings:
    """Check and type the config table; a bad value is a one-line ``ConfigError`` naming the key."""
    read = PluginTable(PLUGIN, table)
    http = read_http_options(read, default_base_url=ANTHROPIC_BASE_URL, default_key_env=DEFAULT_KEY_ENV)
    models_table = table.get("models", {})
    if not isinstance(models_table, Mapping):
        raise ConfigError(f"{_where('models')} must be a table of model id to settings")
    models: dict[str, ModelInfo] = {}
    if http.base_url == ANTHROPIC_BASE_URL:
        for model_id, (window, output, _thinking) in KNOWN_MODELS.items():
            models[model_id] = ModelInfo(model_id, PROVIDER, context_window=window, max_output_tokens=output)
    for model_id, entry in models_table.items():
        models[model_id] = model_from_table(
            str(model_id), entry, models.get(model_id), provider=PROVIDER, where=_where("models")
        )
    return AnthropicSettings(
        http=http,
        models=models,
        default_max_tokens=read.whole("default_max_tokens", DEFAULT_MAX_TOKENS, minimum=1),
        thinking_budget=read.whole("thinking_budget", 0),
    )
