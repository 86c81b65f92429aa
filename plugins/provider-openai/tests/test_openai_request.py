"""Request building, settings, models and the pre-flight key check (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest
from crab import ConfigError, ModelRequest, ToolSpec
from crab.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from crab.testing import save_key
from crab_provider_openai.provider import OpenAIProvider
from crab_provider_openai.request import build_body, build_headers, endpoint
from crab_provider_openai.settings import OPENAI_BASE_URL, parse_settings

HISTORY = (
    UserMessage("list files"),
    AssistantMessage(
        content="Sure.",
        tool_calls=(
            ToolCall("call_1", "ls", {"path": "."}),
            ToolCall("call_2", "ls", {}, raw_arguments='{"path": ', parse_error="not valid JSON"),
        ),
        stop_reason="tool_use",
    ),
    ToolResultMessage("call_1", "ls", "a.py\nb.py"),
    ToolResultMessage("call_2", "ls", "invalid arguments", is_error=True),
    AssistantMessage(content="partial", stop_reason="error"),
    UserMessage("thanks"),
)
TOOL = ToolSpec("ls", "List a folder.", {"type": "object", "properties": {"path": {"type": "string"}}})


def test_body_has_system_history_tools_and_sampling() -> None:
    settings = parse_settings({"base_url": "http://127.0.0.1:1/v1"})
    request = ModelRequest("llama3", "You are crab.", HISTORY, (TOOL,), max_tokens=512, temperature=0.2)
    body = build_body(request, settings)
    assert body["model"] == "llama3"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 512
    assert body["temperature"] == 0.2
    assert body["tools"] == [
        {"type": "function", "function": {"name": "ls", "description": "List a folder.", "parameters": TOOL.parameters}}
    ]
    assert body["messages"] == [
        {"role": "system", "content": "You are crab."},
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": "Sure.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": '{"path": "."}'}},
                {"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py\nb.py"},
        {"role": "tool", "tool_call_id": "call_2", "content": "invalid arguments"},
        {"role": "user", "content": "thanks"},
    ]


def test_openai_itself_gets_max_completion_tokens_and_no_empty_options() -> None:
    settings = parse_settings({})
    body = build_body(ModelRequest("gpt-4.1-mini", "", (UserMessage("x"),), max_tokens=100), settings)
    assert body["max_completion_tokens"] == 100
    assert "max_tokens" not in body
    assert "tools" not in body
    assert "temperature" not in body
    assert body["messages"] == [{"role": "user", "content": "x"}]
    assert endpoint(settings) == f"{OPENAI_BASE_URL}/chat/completions"


def test_headers_carry_the_key_only_when_there_is_one() -> None:
    settings = parse_settings({"headers": {"HTTP-Referer": "https://example.org"}})
    assert build_headers("k-123", settings)["authorization"] == "Bearer k-123"
    assert "authorization" not in build_headers(None, settings)
    assert build_headers(None, settings)["HTTP-Referer"] == "https://example.org"


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ({"base_url": "ftp://x"}, "base_url"),
        ({"max_retries": -1}, "max_retries"),
        ({"max_retries": 1.5}, "max_retries"),
        ({"retry_cap": "soon"}, "retry_cap"),
        ({"idle_timeout": 0}, "idle_timeout"),
        ({"models": {"m": {"context_windw": 1}}}, "context_windw"),
        ({"models": {"m": {"input_price": "cheap"}}}, "input_price"),
        ({"models": []}, "models"),
        ({"headers": {"a": 1}}, "headers"),
    ],
)
def test_bad_settings_are_one_line_config_errors(table: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings(table)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_models_known_for_openai_and_configured_prices_merge() -> None:
    provider = OpenAIProvider({"models": {"gpt-4.1-mini": {"input_price": 0.4, "output_price": 1.6}}})
    models = {m.id: m for m in provider.models()}
    mini = models["gpt-4.1-mini"]
    assert (mini.context_window, mini.input_price, mini.output_price) == (1_047_576, 0.4, 1.6)
    assert models["gpt-4o"].context_window == 128_000
    assert all(m.provider == "openai" for m in models.values())


def test_a_custom_base_url_lists_only_configured_models() -> None:
    provider = OpenAIProvider({"base_url": "http://localhost:11434/v1", "models": {"qwen3": {"context_window": 32768}}})
    assert [(m.id, m.context_window) for m in provider.models()] == [("qwen3", 32768)]


def test_check_names_the_variable_when_the_key_is_missing() -> None:
    provider = OpenAIProvider({}, env={})
    with pytest.raises(ConfigError) as info:
        provider.check("gpt-4.1-mini")
    message = str(info.value)
    assert "set OPENAI_API_KEY" in message
    assert "\n" not in message
    assert info.value.exit_code == 2


def test_check_uses_a_per_provider_variable_and_the_auth_file(isolated_home: Path) -> None:
    custom = OpenAIProvider({"base_url": "https://api.deepseek.com/v1", "api_key_env": "DEEPSEEK_API_KEY"}, env={})
    with pytest.raises(ConfigError, match="set DEEPSEEK_API_KEY"):
        custom.check("deepseek-chat")
    OpenAIProvider({}, env={"OPENAI_API_KEY": "sk-from-env-123456"}).check("gpt-4.1-mini")
    save_key("openai", "sk-from-file-123456")
    OpenAIProvider({}, env={}).check("gpt-4.1-mini")
    assert (isolated_home / "auth.json").stat().st_mode & 0o777 == 0o600


def test_local_servers_need_no_key() -> None:
    OpenAIProvider({"base_url": "http://127.0.0.1:8080/v1"}, env={}).check("local")


def test_a_bad_table_surfaces_at_check_not_at_construction() -> None:
    provider = OpenAIProvider({"max_retries": "many"})
    with pytest.raises(ConfigError, match="max_retries"):
        provider.check("gpt-4.1-mini")
    with pytest.raises(ConfigError):
        provider.models()
