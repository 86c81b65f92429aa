"""Request building, settings, models and the pre-flight key check (no network)."""

from __future__ import annotations

import pytest
from crab import ConfigError, ModelRequest, ToolSpec
from crab.messages import AssistantMessage, Thinking, ToolCall, ToolResultMessage, UserMessage
from crab_provider_anthropic.provider import AnthropicProvider
from crab_provider_anthropic.request import EMPTY_REPLY, build_body, build_headers, endpoint
from crab_provider_anthropic.settings import parse_settings

TOOL = ToolSpec("ls", "List a folder.", {"type": "object", "properties": {"path": {"type": "string"}}})
HISTORY = (
    UserMessage("list files"),
    AssistantMessage(
        content="Sure.",
        thinking=(Thinking("plan", signature="sig-1"), Thinking("", signature="opaque", redacted=True), Thinking("x")),
        tool_calls=(
            ToolCall("toolu_1", "ls", {"path": "."}),
            ToolCall("toolu_2", "ls", {}, raw_arguments='{"path": ', parse_error="not valid JSON"),
        ),
        stop_reason="tool_use",
    ),
    ToolResultMessage("toolu_1", "ls", "a.py"),
    ToolResultMessage("toolu_2", "ls", "invalid arguments", is_error=True),
    UserMessage("and tests?"),
    AssistantMessage(content="half", stop_reason="aborted"),
    AssistantMessage(content="", stop_reason="end"),
    UserMessage("ok"),
)


def test_body_alternates_roles_and_replays_signed_thinking() -> None:
    settings = parse_settings({})
    body = build_body(ModelRequest("claude-sonnet-4-5", "You are crab.", HISTORY, (TOOL,), temperature=0.5), settings)
    assert body["system"] == "You are crab."
    assert body["max_tokens"] == 64_000  # the model's documented output limit
    assert body["temperature"] == 0.5
    assert body["stream"] is True
    assert body["tools"] == [{"name": "ls", "description": "List a folder.", "input_schema": TOOL.parameters}]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "list files"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "plan", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Sure."},
                {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "."}},
                {"type": "tool_use", "id": "toolu_2", "name": "ls", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "invalid arguments", "is_error": True},
                {"type": "text", "text": "and tests?"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": EMPTY_REPLY}]},
        {"role": "user", "content": [{"type": "text", "text": "ok"}]},
    ]


def test_thinking_budget_sets_thinking_drops_temperature_and_keeps_max_tokens_above_it() -> None:
    settings = parse_settings({"thinking_budget": 10_000, "default_max_tokens": 4096})
    request = ModelRequest("custom-model", "", (UserMessage("x"),), max_tokens=2048, temperature=0.3)
    body = build_body(request, settings)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 10_000}
    assert "temperature" not in body
    assert body["max_tokens"] == 14_096
    assert "system" not in body
    off = build_body(ModelRequest("m", "", (UserMessage("x"),), options={"thinking_budget": 0}), settings)
    assert "thinking" not in off
    assert off["max_tokens"] == 4096


def test_headers_and_endpoint() -> None:
    settings = parse_settings({"headers": {"anthropic-beta": "interleaved-thinking-2025-05-14"}})
    headers = build_headers("k-123", settings)
    assert headers["x-api-key"] == "k-123"
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert "x-api-key" not in build_headers(None, settings)
    assert endpoint(settings) == "https://api.anthropic.com/v1/messages"


@pytest.mark.parametrize(
    ("table", "needle"),
    [
        ({"base_url": "api.anthropic.com"}, "base_url"),
        ({"max_retries": -2}, "max_retries"),
        ({"thinking_budget": 1.5}, "thinking_budget"),
        ({"models": {"m": {"price": 1}}}, "price"),
        ({"models": {"m": {"cache_write_price": -1}}}, "cache_write_price"),
        ({"require_key": "yes"}, "require_key"),
    ],
)
def test_bad_settings_are_one_line_config_errors(table: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings(table)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_models_list_known_ones_with_configured_prices() -> None:
    provider = AnthropicProvider(
        {"models": {"claude-sonnet-4-5": {"input_price": 3.0, "output_price": 15.0, "cache_write_price": 3.75}}}
    )
    models = {m.id: m for m in provider.models()}
    sonnet = models["claude-sonnet-4-5"]
    assert (sonnet.context_window, sonnet.input_price) == (200_000, 3.0)
    assert sonnet.cache_write_price == 3.75
    assert models["claude-3-5-haiku-latest"].max_output_tokens == 8_192


def test_check_names_the_variable_when_the_key_is_missing() -> None:
    with pytest.raises(ConfigError) as info:
        AnthropicProvider({}, env={}).check("claude-sonnet-4-5")
    assert "set ANTHROPIC_API_KEY" in str(info.value)
    assert info.value.exit_code == 2
    AnthropicProvider({}, env={"ANTHROPIC_API_KEY": "sk-ant-123456789"}).check("claude-sonnet-4-5")
    with pytest.raises(ConfigError, match="set CORP_CLAUDE_KEY"):
        AnthropicProvider({"api_key_env": "CORP_CLAUDE_KEY"}, env={}).check("claude-sonnet-4-5")
