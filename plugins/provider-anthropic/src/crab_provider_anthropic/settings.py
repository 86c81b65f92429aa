"""The ``[plugins.provider-anthropic]`` config table, checked and typed, and the models it knows.

Built-in context windows apply only when ``base_url`` is Anthropic's own; prices always come
from config, because a price list shipped in code is wrong by the time anyone reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from crab.errors import ConfigError
from crab.providers import ModelInfo
from crab.retry import RetryPolicy

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

_MODEL_FIELDS = {
    "context_window": int,
    "max_output_tokens": int,
    "input_price": float,
    "output_price": float,
    "cache_read_price": float,
    "cache_write_price": float,
    "supports_tools": bool,
    "supports_thinking": bool,
}


@dataclass(frozen=True)
class AnthropicSettings:
    """Everything the provider reads from its config table, with defaults."""

    base_url: str = ANTHROPIC_BASE_URL
    api_key_env: str = DEFAULT_KEY_ENV
    require_key: bool = True
    models: Mapping[str, ModelInfo] = field(default_factory=dict)
    cache_write_prices: Mapping[str, float] = field(default_factory=dict)
    max_retries: int = 3
    retry_base_delay: float = 2.0
    retry_cap: float = 60.0
    idle_timeout: float = 300.0
    connect_timeout: float = 10.0
    default_max_tokens: int = DEFAULT_MAX_TOKENS
    thinking_budget: int = 0
    headers: Mapping[str, str] = field(default_factory=dict)
    provider: str = PROVIDER

    @property
    def policy(self) -> RetryPolicy:
        return RetryPolicy(max_retries=self.max_retries, base_delay=self.retry_base_delay, retry_cap=self.retry_cap)

    def model_info(self, model: str) -> ModelInfo | None:
        return self.models.get(model)


def _where(key: str) -> str:
    return f"config: plugins.{PLUGIN}.{key}"


def _number(table: Mapping[str, Any], key: str, default: float, *, minimum: float = 0.0) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
        raise ConfigError(f"{_where(key)} must be a number of at least {minimum:g}, not {value!r}")
    return float(value)


def _whole(table: Mapping[str, Any], key: str, default: int, *, minimum: int = 0) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{_where(key)} must be a whole number of at least {minimum}, not {value!r}")
    return value


def _text(table: Mapping[str, Any], key: str, default: str) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise ConfigError(f"{_where(key)} must be a string, not {value!r}")
    return value


def parse_model(model_id: str, table: Any, base: ModelInfo | None) -> tuple[ModelInfo, float | None]:
    """One ``models."<id>"`` entry and its cache write price; omitted fields keep built-in values."""
    if not isinstance(table, Mapping):
        raise ConfigError(f'{_where("models")}."{model_id}" must be a table like {{ context_window = 200000 }}')
    info = base or ModelInfo(id=model_id, provider=PROVIDER)
    changes: dict[str, Any] = {}
    for key, value in table.items():
        kind = _MODEL_FIELDS.get(key)
        if kind is None:
            raise ConfigError(
                f'{_where("models")}."{model_id}".{key} is not a model setting (use: {", ".join(_MODEL_FIELDS)})'
            )
        if kind is bool:
            ok = isinstance(value, bool)
        else:
            ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
        if not ok:
            raise ConfigError(f'{_where("models")}."{model_id}".{key} must be a {kind.__name__}, not {value!r}')
        changes[key] = kind(value)
    write_price = changes.pop("cache_write_price", None)
    return replace(info, **changes), write_price


def parse_settings(table: Mapping[str, Any]) -> AnthropicSettings:
    """Check and type the config table; a bad value is a one-line ``ConfigError`` naming the key."""
    base_url = _text(table, "base_url", ANTHROPIC_BASE_URL).rstrip("/")
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{_where('base_url')} must start with http:// or https://, not {base_url!r}")
    is_anthropic = base_url == ANTHROPIC_BASE_URL
    require_key = table.get("require_key", is_anthropic or "api_key_env" in table)
    if not isinstance(require_key, bool):
        raise ConfigError(f"{_where('require_key')} must be true or false, not {require_key!r}")
    models_table = table.get("models", {})
    if not isinstance(models_table, Mapping):
        raise ConfigError(f"{_where('models')} must be a table of model id to settings")
    models: dict[str, ModelInfo] = {}
    if is_anthropic:
        for model_id, (window, output, thinking) in KNOWN_MODELS.items():
            models[model_id] = ModelInfo(
                model_id, PROVIDER, context_window=window, max_output_tokens=output, supports_thinking=thinking
            )
    write_prices: dict[str, float] = {}
    for model_id, entry in models_table.items():
        info, write_price = parse_model(str(model_id), entry, models.get(model_id))
        models[model_id] = info
        if write_price is not None:
            write_prices[model_id] = write_price
    headers = table.get("headers", {})
    if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
        raise ConfigError(f"{_where('headers')} must be a table of header name to string")
    return AnthropicSettings(
        base_url=base_url,
        api_key_env=_text(table, "api_key_env", DEFAULT_KEY_ENV),
        require_key=require_key,
        models=models,
        cache_write_prices=write_prices,
        max_retries=_whole(table, "max_retries", 3),
        retry_base_delay=_number(table, "retry_base_delay", 2.0),
        retry_cap=_number(table, "retry_cap", 60.0),
        idle_timeout=_number(table, "idle_timeout", 300.0, minimum=0.001),
        connect_timeout=_number(table, "connect_timeout", 10.0, minimum=0.001),
        default_max_tokens=_whole(table, "default_max_tokens", DEFAULT_MAX_TOKENS, minimum=1),
        thinking_budget=_whole(table, "thinking_budget", 0),
        headers={str(k): str(v) for k, v in headers.items()},
    )
