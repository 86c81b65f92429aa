"""The ``[plugins.provider-anthropic]`` config table: its declaration, its typed reading, the models it knows.

Core checks the table against ``TABLE`` (``check_table`` covers the nested ``models``) before
anything runs, and drops key routing an untrusted project sets (``crab_provider_kit.key_routing``).

Built-in context windows, prices and prompt-cache minimums apply only when ``base_url`` is
Anthropic's own (a proxy bills its own way); a ``models."<id>"`` entry overrides any of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from crab import ConfigTable, ModelInfo, Setting
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

from crab_provider_anthropic.extra import EXTRA_BODY

PLUGIN = "provider-anthropic"
PROVIDER = "anthropic"
ANTHROPIC_BASE_URL = "https://api.anthropic.com/v1"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
DEFAULT_MIN_CACHE = 1024
"""The shortest cacheable prefix of a model crab has no figure for (Sonnet's and Opus's)."""
CACHE_TTLS = ("5m", "1h")
CACHE_READ_FACTOR = 0.1
CACHE_WRITE_FACTORS = {"5m": 1.25, "1h": 2.0}
"""Anthropic's cache prices as multiples of the input price: reads, and writes per cache lifetime."""


class Known(NamedTuple):
    """What Anthropic documents for one model. Prices are US dollars per million tokens
    (https://docs.anthropic.com/en/docs/about-claude/pricing); a cache read costs 0.1x the input
    price and a cache write 1.25x (5-minute cache) or 2x (1-hour cache), so only the base prices
    are written here (``cache_prices``). ``min_cache`` is the shortest prefix, in tokens, the
    model caches (Anthropic's prompt-caching guide, "Cache limitations"): a shorter one is
    processed uncached whatever the markers say, so crab places none there; 0 for a model
    without a prompt cache."""

    context_window: int
    max_output_tokens: int
    input_price: float
    output_price: float
    min_cache: int = 1024


KNOWN_MODELS: dict[str, Known] = {
    "claude-opus-4-1": Known(200_000, 32_000, 15.0, 75.0),
    "claude-opus-4-0": Known(200_000, 32_000, 15.0, 75.0),
    "claude-sonnet-4-5": Known(200_000, 64_000, 3.0, 15.0),
    "claude-sonnet-4-0": Known(200_000, 64_000, 3.0, 15.0),
    "claude-haiku-4-5": Known(200_000, 64_000, 1.0, 5.0, min_cache=4096),
    "claude-3-7-sonnet-latest": Known(200_000, 64_000, 3.0, 15.0),
    "claude-3-5-haiku-latest": Known(200_000, 8_192, 0.8, 4.0, min_cache=2048),
}
"""Claude models crab knows; every Claude model from 3 on reads images (``ModelInfo.vision``)."""
TEXT_ONLY_MODELS: dict[str, Known] = {
    "claude-2.1": Known(200_000, 4_096, 8.0, 24.0, min_cache=0),
    "claude-2.0": Known(100_000, 4_096, 8.0, 24.0, min_cache=0),
    "claude-instant-1.2": Known(100_000, 4_096, 0.8, 2.4, min_cache=0),
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
    cache: bool = True
    """Place ``cache_control`` breakpoints (``cache.py``); off sends none."""
    cache_ttl: str = "5m"
    """How long a cached prefix lives: ``5m`` (Anthropic's default) or ``1h``."""
    min_cache: Mapping[str, int] = field(default_factory=dict)
    """Each known model's shortest cacheable prefix in tokens (``Known.min_cache``)."""

    def model_info(self, model: str) -> ModelInfo | None:
        return self.models.get(model)

    def min_cache_tokens(self, model: str) -> int:
        """The model's shortest cacheable prefix; a dated id (``claude-haiku-4-5-20251001``,
        ``claude-3-5-haiku-20241022``) has its alias's."""
        for name in (model, *alias_candidates(model)):
            if name in self.min_cache:
                return self.min_cache[name]
        return DEFAULT_MIN_CACHE

    def extra_body_for(self, model: str) -> dict[str, Any]:
        """The table's ``extra_body`` with the model's own laid on top (the model's wins)."""
        return merge_tables(self.extra_body, self.model_extra_body.get(model, {}))


MODELS_KEY = ("plugins", PLUGIN, "models")
_DATED = re.compile(r"^(.+)-\d{8}$")


def alias_candidates(model: str) -> tuple[str, ...]:
    """The aliases a dated model id may have: the id without its date (``claude-haiku-4-5``),
    then with ``-latest`` (the Claude 3 models' aliases); none for an id without a date."""
    dated = _DATED.match(model)
    return (dated.group(1), f"{dated.group(1)}-latest") if dated else ()


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
        Setting("cache", "bool", True, "mark the prompt's prefix for Anthropic's prompt cache", trust_only=True),
        Setting(
            "cache_ttl",
            "str",
            "5m",
            "how long a cached prefix lives (1h: writes cost 2x input)",
            choices=CACHE_TTLS,
            trust_only=True,
        ),
    ),
    check=check_table,
    trust_filter=lambda project, trusted: key_routing(project, trusted) + extra_body_paths(project),
)


def parse_settings(table: Mapping[str, Any]) -> AnthropicSettings:
    """Check and type the config table; a bad value is a one-line ``ConfigError`` naming the key."""
    read = PluginTable(PLUGIN, table)
    http = read_http_options(read, default_base_url=ANTHROPIC_BASE_URL, default_key_env=DEFAULT_KEY_ENV)
    cache_ttl = read.text("cache_ttl", "5m")
    if cache_ttl not in CACHE_TTLS:
        raise read.invalid("cache_ttl", 'one of "5m", "1h"', cache_ttl)
    own = http.base_url == ANTHROPIC_BASE_URL
    table_models = {**KNOWN_MODELS, **TEXT_ONLY_MODELS} if own else {}
    known = {m: known_info(m, k, cache_ttl) for m, k in table_models.items()}
    models, model_extra_body = EXTRA_BODY.models(table.get("models", {}), known, provider=PROVIDER, where=MODELS_KEY)
    return AnthropicSettings(
        http=http,
        models=models,
        default_max_tokens=read.whole("default_max_tokens", DEFAULT_MAX_TOKENS, minimum=1),
        thinking_budget=read.whole("thinking_budget", 0),
        extra_body=EXTRA_BODY.read(table.get(EXTRA_KEY, {}), ("plugins", PLUGIN, EXTRA_KEY)),
        model_extra_body=model_extra_body,
        cache=read.flag("cache", True),
        cache_ttl=cache_ttl,
        min_cache={m: k.min_cache for m, k in table_models.items()},
    )


def cache_prices(input_price: float, ttl: str) -> tuple[float, float]:
    """``(cache read, cache write)`` prices for a model whose input costs ``input_price``."""
    return round(input_price * CACHE_READ_FACTOR, 6), round(input_price * CACHE_WRITE_FACTORS[ttl], 6)


def known_info(model: str, known: Known, cache_ttl: str) -> ModelInfo:
    """A known model as ``ModelInfo``, its cache write priced for the configured ``cache_ttl``."""
    read_price, write_price = cache_prices(known.input_price, cache_ttl)
    return ModelInfo(
        model,
        PROVIDER,
        context_window=known.context_window,
        max_output_tokens=known.max_output_tokens,
        input_price=known.input_price,
        output_price=known.output_price,
        cache_read_price=read_price,
        cache_write_price=write_price,
        vision=model in KNOWN_MODELS,
    )
