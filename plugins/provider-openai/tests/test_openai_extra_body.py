"""``extra_body``: where it may be set, what wins when several tables set it, and what it may not touch."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from crab import ConfigError, ModelRequest
from crab.messages import UserMessage
from crab.testing import make_config
from crab_provider_openai.provider import OpenAIProvider, providers_from_config
from crab_provider_openai.request import build_body
from crab_provider_openai.settings import parse_settings

LOCAL = "http://127.0.0.1:8080/v1"


def body_for(settings: Any, model: str = "m", **request: Any) -> dict[str, Any]:
    return build_body(ModelRequest(model, "", (UserMessage("hi"),), **request), settings)


def test_table_then_model_with_nested_tables_merged_key_by_key() -> None:
    settings = parse_settings(
        {
            "base_url": LOCAL,
            "extra_body": {"top_k": 40, "chat_template_kwargs": {"enable_thinking": False, "x": 1}},
            "models": {"m": {"extra_body": {"top_k": 20, "chat_template_kwargs": {"enable_thinking": True}}}},
        }
    )
    body = body_for(settings)
    assert body["top_k"] == 20
    assert body["chat_template_kwargs"] == {"enable_thinking": True, "x": 1}
    assert body_for(settings, "other")["top_k"] == 40
    assert [m.id for m in settings.models.values()] == ["m"]  # extra_body is not a model setting


def test_extra_body_replaces_sampling_fields_crab_would_send() -> None:
    settings = parse_settings({"base_url": LOCAL, "extra_body": {"temperature": 0.7, "max_tokens": 512}})
    body = body_for(settings, temperature=0.0, max_tokens=64)
    assert (body["temperature"], body["max_tokens"]) == (0.7, 512)


def test_each_endpoint_has_its_own_extra_body_and_does_not_inherit_the_plugin_table() -> None:
    config = make_config(
        {
            "plugins.provider-openai.extra_body": {"top_k": 1},
            "plugins.provider-openai.endpoints.local": {
                "base_url": LOCAL,
                "extra_body": {"min_p": 0.05},
                "models": {"qwen3": {"extra_body": {"min_p": 0.1, "tool_choice": "required"}}},
            },
        }
    )
    by_name = {p.name: p for p in providers_from_config(config) if isinstance(p, OpenAIProvider)}
    local = by_name["local"].settings
    assert local.extra_body_for("other") == {"min_p": 0.05}
    assert local.extra_body_for("qwen3") == {"min_p": 0.1, "tool_choice": "required"}
    assert by_name["openai"].settings.extra_body_for("gpt-4.1") == {"top_k": 1}


@pytest.mark.parametrize("key", ["model", "messages", "stream", "stream_options", "tools"])
def test_fields_crab_builds_cannot_be_replaced(key: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings({"base_url": LOCAL, "extra_body": {key: False}})
    assert str(info.value) == (
        f"config: plugins.provider-openai.extra_body.{key}: expected a field other than "
        "model, messages, stream, stream_options, tools (crab builds those itself), found false"
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            {"extra_body": "top_k=20"},
            "plugins.provider-openai.extra_body: expected a table of request fields, like { top_k = 20 }, found",
        ),
        (
            {"extra_body": {"seed": datetime.date(2026, 1, 1)}},
            "plugins.provider-openai.extra_body.seed: expected a string, number, boolean, array or table",
        ),
        ({"extra_body": {"a": [1, float("inf")]}}, "plugins.provider-openai.extra_body.a.1: expected a finite number"),
        (
            {"models": {"gpt-4.1": {"extra_body": {"messages": []}}}},
            'plugins.provider-openai.models."gpt-4.1".extra_body.messages: expected a field other than',
        ),
        ({"models": {"m": {"extra_body": 3}}}, "plugins.provider-openai.models.m.extra_body: expected a table"),
    ],
)
def test_bad_extra_body_is_a_one_line_config_error(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings({"base_url": LOCAL, **table})
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_bad_endpoint_extra_body_names_the_endpoint_table() -> None:
    config = make_config({"plugins.provider-openai.endpoints.local": {"base_url": LOCAL, "extra_body": {"stream": 0}}})
    local = providers_from_config(config)[-1]
    with pytest.raises(ConfigError) as info:
        local.check("m")
    assert "plugins.provider-openai.endpoints.local.extra_body.stream" in str(info.value)


def test_tool_fields_are_left_out_of_a_request_that_offers_no_tools() -> None:
    """The loop's last call of a turn offers no tools; OpenAI rejects tool_choice without them."""
    from crab import ToolSpec

    settings = parse_settings(
        {"base_url": LOCAL, "extra_body": {"tool_choice": "required", "parallel_tool_calls": False, "top_k": 5}}
    )
    assert body_for(settings)["top_k"] == 5
    assert "tool_choice" not in body_for(settings)
    assert "parallel_tool_calls" not in body_for(settings)
    with_tools = body_for(settings, tools=(ToolSpec("read", "Read.", {"type": "object"}),))
    assert (with_tools["tool_choice"], with_tools["parallel_tool_calls"]) == ("required", False)
