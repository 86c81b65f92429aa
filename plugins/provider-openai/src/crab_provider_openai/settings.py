"""The ``[plugins.provider-openai]`` config table, checked and typed, and the models it knows.

Built-in context windows apply only when ``base_url`` is OpenAI's own; prices always come from
config, because a price list shipped in code is wrong by the time anyone reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from crab.errors import ConfigError
from crab.providers import ModelInfo
from crab.retry import RetryPolicy

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

_MODEL_FIELDS = {
    "context_window": int,
    "max_output_tokens": int,
    "input_price": float,
    "output_price": float,
    "cache_read_price": float,
    "supports_tools": bool,
    "supports_thinking": bool,
}


@dataclass(frozen=True)
class OpenAISettings:
    """Everything the provider reads from its config table, with defaults."""

    base_url: str = OPENAI_BASE_URL
    api_key_env: str = DEFAULT_KEY_ENV
    require_key: bool = True
    models: Mapping[str, ModelInfo] = field(default_factory=dict)
    max_retries: int = 3
    retry_base_delay: float = 2.0
    retry_cap: float = 60.0
    idle_timeout: float = 300.0
    connect_timeout: float = 10.0
    include_usage: bool = True
    max_tokens_field: str = "max_tokens"
    think_tags: bool = True
    headers: Mapping[str, str] = field(default_factory=dict)
    provider: str = PROVIDER

    @property
    def policy(self) -> RetryPolicy:
        return RetryPolicy(max_retries=self.max_retries, base_delay=self.retry_base_delay, retry_cap=self.retry_cap)

    @property
    def is_openai(self) -> bool:
        return self.base_url.rstrip("/") == OPENAI_BASE_URL

    def model_info(self, model: str) -> ModelInfo | None:
        return self.models.get(model)


def _where(key: str) -> str:
    return f"config: plugins.{PLUGIN}.{key}"


def _number(table: Mapping[str, Any], key: str, default: float, *, minimum: float = 0.0) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
        raise ConfigError(f"{_where(key)} must be a number of at least {minimum:g}, not {value!r}")
    return float(value)


def _text(table: Mapping[str, Any], key: str, default: str) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise ConfigError(f"{_where(key)} must be a string, not {value!r}")
    return value


def _flag(table: Mapping[str, Any], key: str, default: bool) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{_where(key)} must be true or false, not {value!r}")
    return value


def parse_model(model_id: str, table: Any, base: ModelInfo | None, provider: str) -> ModelInfo:
    """One ``models."<id>"`` entry; fields it leaves out keep the built-in values."""
    if not isinstance(table, Mapping):
        raise ConfigError(f'{_where("models")}."{model_id}" must be a table like {{ context_window = 128000 }}')
    info = base or ModelInfo(id=model_id, provider=provider)
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
    return replace(info, **changes)


def parse_settings(table: Mapping[str, Any]) -> OpenAISettings:
    """Check and type the config table; a bad value is a one-line ``ConfigError`` naming the key."""
    base_url = _text(table, "base_url", OPENAI_BASE_URL).rstrip("/")
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{_where('base_url')} must start with http:// or https://, not {base_url!r}")
    is_openai = base_url == OPENAI_BASE_URL
    key_env = _text(table, "api_key_env", DEFAULT_KEY_ENV)
    # Local servers (Ollama, llama.cpp, vLLM) take no key; a custom endpoint needs one only when
    # the user named the variable that holds it.
    require_key = _flag(table, "require_key", is_openai or "api_key_env" in table)
    models_table = table.get("models", {})
    if not isinstance(models_table, Mapping):
        raise ConfigError(f"{_where('models')} must be a table of model id to settings")
    models: dict[str, ModelInfo] = {}
    if is_openai:
        for model_id, (window, output) in KNOWN_MODELS.items():
            models[model_id] = ModelInfo(model_id, PROVIDER, context_window=window, max_output_tokens=output)
    for model_id, entry in models_table.items():
        models[model_id] = parse_model(str(model_id), entry, models.get(model_id), PROVIDER)
    headers = table.get("headers", {})
    if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
        raise ConfigError(f"{_where('headers')} must be a table of header name to string")
    max_retries = table.get("max_retries", 3)
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ConfigError(f"{_where('max_retries')} must be a whole number of at least 0, not {max_retries!r}")
    max_tokens_field = _text(table, "max_tokens_field", "max_completion_tokens" if is_openai else "max_tokens")
    return OpenAISettings(
        base_url=base_url,
        api_key_env=key_env,
        require_key=require_key,
        models=models,
        max_retries=max_retries,
        retry_base_delay=_number(table, "retry_base_delay", 2.0),
        retry_cap=_number(table, "retry_cap", 60.0),
        idle_timeout=_number(table, "idle_timeout", 300.0, minimum=0.001),
        connect_timeout=_number(table, "connect_timeout", 10.0, minimum=0.001),
        include_usage=_flag(table, "include_usage", True),
        max_tokens_field=max_tokens_field,
        think_tags=_flag(table, "think_tags", True),
        headers={str(k): str(v) for k, v in headers.items()},
    )
