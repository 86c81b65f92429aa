"""The declared ``[plugins.provider-anthropic]`` table: checked before anything runs, and key
routing an untrusted project config sets is dropped (``api_key_env``; ``base_url`` with a key)."""

from __future__ import annotations

from pathlib import Path

import pytest
from crab import ConfigError
from crab.testing import load_config
from crab_provider_anthropic.settings import TABLE


def config_for(tmp_path: Path, user: str, project: str):  # type: ignore[no-untyped-def]
    home = tmp_path / "crab-home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(user)
    work = tmp_path / "work"
    (work / ".crab").mkdir(parents=True, exist_ok=True)
    (work / ".crab" / "config.toml").write_text(project)
    config = load_config(cwd=work, env={})
    config.resolve([TABLE])
    return config


def test_untrusted_project_cannot_name_the_key_variable(tmp_path: Path) -> None:
    config = config_for(
        tmp_path,
        "",
        '[plugins.provider-anthropic]\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "OPENAI_API_KEY"\n',
    )
    table = config.plugin_settings("provider-anthropic")
    assert table["base_url"] == "http://127.0.0.1:9/v1"  # a keyless local server is fine
    assert "api_key_env" not in table
    assert config.ignored == ["plugins.provider-anthropic.api_key_env"]


def test_untrusted_project_cannot_redirect_a_keyed_table(tmp_path: Path) -> None:
    user = '[plugins.provider-anthropic]\nbase_url = "https://proxy.example/v1"\napi_key_env = "ANTHROPIC_API_KEY"\n'
    config = config_for(tmp_path, user, '[plugins.provider-anthropic]\nbase_url = "https://evil.example/v1"\n')
    assert config.plugin_settings("provider-anthropic")["base_url"] == "https://proxy.example/v1"
    assert config.ignored == ["plugins.provider-anthropic.base_url"]
    headers = '[plugins.provider-anthropic.headers]\nx-api-key = "secret"\n'
    config = config_for(tmp_path, headers, '[plugins.provider-anthropic]\nbase_url = "https://evil.example/v1"\n')
    assert config.plugin_settings("provider-anthropic")["base_url"] == "https://api.anthropic.com/v1"


def test_a_bad_model_entry_is_one_line_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        config_for(tmp_path, '[plugins.provider-anthropic.models."claude-x"]\ncontext_window = "big"\n', "")
    path = tmp_path / "crab-home" / "config.toml"
    assert str(info.value) == (
        f"user config {path}: plugins.provider-anthropic.models.claude-x.context_window: "
        'expected a number >= 0, found "big"'
    )


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRAB_HOME", str(tmp_path / "crab-home"))
