"""The ``[plugins.provider-anthropic]`` config table: its declaration, its typed reading, the models it knows.

Core checks the table against ``TABLE`` (``check_table`` covers the nested ``models``) before
anything runs, and drops key routing an untrusted project sets (``crab_provider_kit.key_routing``).

Built-in context windows apply only when ``base_url`` is Anthropic's own; prices always come
from config, because a price list shipped in code is wrong by the time anyone reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from crab import ConfigTable, ModelInfo, PluginTable, Setting
from crab_provider_kit import (
    EXTRA_KEY,
    HttpOptions,
    extra_body_paths,
    http_settings,
    key_routing,
    merge_tables,
    read_http_options,
)

from crab_provider_anthropic.extra import EXTRA_BODY

PLUGIN = "provider-anthropic"
PROVIDER = "anthropic"
ANTHROPIC_BASE_URL = "https://api.anthropic.com/v1"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192

# (context window, max output tokens) as Anthropic documents them.
KNOWN_MODELS: dict[str, tuple[int, int]] = {
    "claude-opus-4-1": (200_000, 32_000),
    "claude-opus-4-0": (200_000, 32_000),
    "claude-sonnet-4-5": (200_000, 64_000),
    "claude-sonnet-4-0": (200_000, 64_000),
    "claude-haiku-4-5": (200_000, 64_000),
    "claude-3-7-sonnet-latest": (200_000, 64_000),
    "claude-3-5-haiku-latest": (200_000, 8_192),
}
"""Claude models crab knows; every Claude model from 3 on reads images (``ModelInfo.vision``)."""
TEXT_ONLY_MODELS: dict[str, tuple[int, int]] = {
    "claude-2.1": (200_000, 4_096),
    "claude-2.0": (100_000, 4_096),
    "claude-instant-1.2": (100_000, 4_096),
}
"""The Claude models before 3, which read no images: a request with images to one is refused in
one line before it is sent. Any other model may set ``vision`` in its models table."""


@dataclass(frozen=True)
class AnthropicSettings:
    """Everything the provider reads from its config table, with defaults."""

    http: HttpOptions = field(default_factory=lambda: HttpOptions(ANTHROPIC_BASE_URL, DEFAULT_KEY_ENV))
    models: Mapping[str, ModelInfo] = field(default_factory=dict)
    default_max_tokens: int = DEFAULT_MAX_TOKENS
    thinking_budget: int = 0
    provider: str = PROVIDER
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    model_extra_body: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def model_info(self, model: str) -> ModelInfo | None:
        return self.models.get(model)

    def extra_body_for(self, model: str) -> dict[str, Any]:
        """The table's ``extra_body`` with the model's own laid on top (the model's wins)."""
        return merge_tables(self.extra_body, self.model_extra_body.get(model, {}))


MODELS_KEY = ("plugins", PLUGIN, "models")


def check_table(values: Mapping[str, Any]) -> None:
    """The whole table, ``models`` included, as the provider will read it; raises ``InvalidValue``."""
    parse_settings(values)


TABLE = ConfigTable(
    name=PLUGIN,
    doc="the Anthropic Messages API",
    settings=(
        *http_settings(ANTHROPIC_BASE_URL, DEFAULT_KEY_ENV),
        Setting("models", "table", doc='per-model settings: models."<id>" = { context_window, prices… }'),
        Setting(
            "default_max_tokens", "int", DEFAULT_MAX_TOKENS, "output limit when [crab] max_tokens is unset", minimum=1
        ),
        Setting("thinking_budget", "int", 0, "extended-thinking token budget (0: off)", minimum=0),
        Setting("extra_body", "table", {}, "fields merged into every request body", trust_only=True),
    ),
    check=check_table,
    trust_filter=lambda project, trusted: key_routing(project, trusted) + extra_body_paths(project),
)


def parse_settings(table: Mapping[str, Any]) -> AnthropicSettings:
    """Check and type the config table; a bad value is a one-line ``ConfigError`` naming the key."""
    read = PluginTable(PLUGIN, table)
    http = read_http_options(read, default_base_url=ANTHROPIC_BASE_URL, default_key_env=DEFAULT_KEY_ENV)
    known = (
        {
            m: ModelInfo(m, PROVIDER, context_window=w, max_output_tokens=o, vision=m in KNOWN_MODELS)
            for m, (w, o) in {**KNOWN_MODELS, **TEXT_ONLY_MODELS}.items()
        }
        if http.base_url == ANTHROPIC_BASE_URL
        else {}
    )
    models, model_extra_body = EXTRA_BODY.models(table.get("models", {}), known, provider=PROVIDER, where=MODELS_KEY)
    return AnthropicSettings(
        http=http,
        models=models,
        default_max_tokens=read.whole("default_max_tokens", DEFAULT_MAX_TOKENS, minimum=1),
        thinking_budget=read.whole("thinking_budget", 0),
        extra_body=EXTRA_BODY.read(table.get(EXTRA_KEY, {}), ("plugins", PLUGIN, EXTRA_KEY)),
        model_extra_body=model_extra_body,
    )
