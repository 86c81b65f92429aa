"""The ``[plugins.provider-openai]`` config table, checked and typed, and the models it knows.

Built-in context windows apply only when ``base_url`` is OpenAI's own; prices always come from
config, because a price list shipped in code is wrong by the time anyone reads it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from crab import ConfigError, ModelInfo, PluginTable
from crab.provider_kit import HttpOptions, model_from_table, read_http_options

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


@dataclass(frozen=True)
class OpenAISettings:
    """Everything the provider reads from its config table, with defaults."""

    http: HttpOptions = field(default_factory=lambda: HttpOptions(OPENAI_BASE_URL, DEFAULT_KEY_ENV))
    models: Mapping[str, ModelInfo] = field(default_factory=dict)
    include_usage: bool = True
    max_tokens_field: str = "max_tokens"
    think_tags: bool = True
    provider: str = PROVIDER

    @property
    def is_openai(self) -> bool:
        return self.http.base_url.rstrip("/") == OPENAI_BASE_URL

    def model_info(self, model: str) -> ModelInfo | None:
        return self.models.get(model)


ENDPOINTS = "endpoints"
_ENDPOINT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


def table_path(provider: str) -> str:
    """Where a provider's table lives under ``[plugins]``: the plugin's own, or one endpoint's."""
    return PLUGIN if provider == PROVIDER else f"{PLUGIN}.{ENDPOINTS}.{provider}"


def _where(key: str, provider: str = PROVIDER) -> str:
    return f"config: plugins.{table_path(provider)}.{key}"


def endpoint_tables(table: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """``[plugins.provider-openai.endpoints.<name>]`` tables: one more provider each, named ``<name>``.

    Raises ``ConfigError`` for a table that is not one, or a name a ``--model name/model`` flag
    could not address.
    """
    endpoints = table.get(ENDPOINTS, {})
    if not isinstance(endpoints, Mapping):
        raise ConfigError(f"config: plugins.{PLUGIN}.{ENDPOINTS} must be a table of endpoint name to settings")
    found: dict[str, Mapping[str, Any]] = {}
    for name, entry in endpoints.items():
        if not isinstance(name, str) or not _ENDPOINT_NAME.match(name) or name == PROVIDER:
            raise ConfigError(
                f"config: plugins.{PLUGIN}.{ENDPOINTS}.{name}: endpoint names are lower-case letters, digits, "
                f"'-' and '_', and not {PROVIDER!r}"
            )
        if not isinstance(entry, Mapping):
            raise ConfigError(f"config: plugins.{PLUGIN}.{ENDPOINTS}.{name} must be a table with at least base_url")
        found[name] = entry
    return found


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
    models_table = table.get("models", {})
    if not isinstance(models_table, Mapping):
        raise ConfigError(f"{_where('models', provider)} must be a table of model id to settings")
    models: dict[str, ModelInfo] = {}
    if is_openai:
        for model_id, (window, output) in KNOWN_MODELS.items():
            models[model_id] = ModelInfo(model_id, provider, context_window=window, max_output_tokens=output)
    for model_id, entry in models_table.items():
        models[model_id] = model_from_table(
            str(model_id), entry, models.get(model_id), provider=provider, where=_where("models", provider)
        )
    return OpenAISettings(
        http=http,
        models=models,
        include_usage=read.flag("include_usage", True),
        max_tokens_field=read.text("max_tokens_field", "max_completion_tokens" if is_openai else "max_tokens"),
        think_tags=read.flag("think_tags", True),
        provider=provider,
    )
