"""Named endpoints: several OpenAI-compatible servers side by side, each its own provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from crab import ConfigError
from crab.testing import CRAB, make_config, run_crab
from crab_provider_openai.provider import providers_from_config


def config_with(endpoints: dict[str, Any], **main: Any) -> Any:
    data: dict[str, Any] = {f"plugins.provider-openai.endpoints.{n}": t for n, t in endpoints.items()}
    data.update({f"plugins.provider-openai.{k}": v for k, v in main.items()})
    return make_config(data)


def test_each_endpoint_is_a_provider_with_its_own_name_models_and_key() -> None:
    providers = providers_from_config(
        config_with(
            {
                "deepseek": {"base_url": "https://api.deepseek.example/v1", "models": {"deepseek-chat": {}}},
                "local": {"base_url": "http://127.0.0.1:11434/v1", "models": {"qwen3": {"context_window": 32768}}},
            }
        )
    )
    by_name = {p.name: p for p in providers}
    assert list(by_name) == ["openai", "deepseek", "local"]
    assert [m.id for m in by_name["local"].models()] == ["qwen3"]
    assert by_name["local"].models()[0].provider == "local"
    assert by_name["deepseek"].settings.http.api_key_env == "DEEPSEEK_API_KEY"
    assert by_name["local"].settings.http.key_for("local", env={"OPENAI_API_KEY": "sk-openai-123456789"}) is None
    assert len(by_name["openai"].models()) > 1  # the plugin's own table is untouched


@pytest.mark.parametrize(
    ("endpoints", "message"),
    [
        (
            {"Bad Name": {"base_url": "http://x"}},
            "config: plugins.provider-openai.endpoints: expected endpoint names of lower-case letters, digits, "
            "'-' and '_', not 'openai', found \"Bad Name\"",
        ),
        ({"openai": {"base_url": "http://x"}}, "not 'openai', found \"openai\""),
        (
            {"local": {}},
            "config: plugins.provider-openai.endpoints.local.base_url: expected the server's URL, "
            "like http://127.0.0.1:8080/v1, found nothing",
        ),
        (
            {"local": {"base_url": "http://x", "models": {"m": {"context_window": "big"}}}},
            "config: plugins.provider-openai.endpoints.local.models.m.context_window: "
            'expected a number >= 0, found "big"',
        ),
    ],
)
def test_bad_endpoint_tables_are_one_line_config_errors(endpoints: dict[str, Any], message: str) -> None:
    broken = providers_from_config(config_with(endpoints))[-1]  # the endpoint, or openai holding the error
    with pytest.raises(ConfigError) as info:
        broken.check("m")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.slow
@pytest.mark.skipif(CRAB is None, reason="the crab console script is not installed in this environment")
def test_crab_run_picks_an_endpoint_by_model_prefix(server: Any, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(
        "[plugins.provider-openai.endpoints.local]\n"
        f'base_url = "{server.url}"\n'
        "retry_base_delay = 0.01\n"
        '[plugins.provider-openai.endpoints.local.models."tiny-model"]\n'
        "context_window = 8192\n"
    )
    models = run_crab(isolated_home, "models", "--plugins", "provider-openai")
    assert "local/tiny-model" in models.stdout
    server.script(server.sse("text_usage.sse"))
    result = run_crab(
        isolated_home,
        "run",
        "hi",
        "--plugins",
        "provider-openai",
        "--model",
        "local/tiny-model",
        env={"OPENAI_API_KEY": "sk-must-not-travel-123456"},
    )
    assert result.returncode == 0, result.stderr
    assert "Hello, world!" in result.stdout
    request = server.requests[0]
    assert request.body["model"] == "tiny-model"
    assert "authorization" not in request.headers  # the OpenAI key stays home
