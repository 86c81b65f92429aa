"""``extra_body``: the provider's table, then the model's, merged into the Messages body; crab's own
fields refused."""

from __future__ import annotations

from typing import Any

import pytest
from crab import ConfigError, ModelRequest
from crab.messages import UserMessage
from crab_provider_anthropic.request import build_body
from crab_provider_anthropic.settings import parse_settings


def body_for(table: dict[str, Any], model: str = "m", **request: Any) -> dict[str, Any]:
    return build_body(ModelRequest(model, "sys", (UserMessage("hi"),), **request), parse_settings(table))


def test_model_extra_body_wins_over_the_table_and_over_crab_sampling() -> None:
    table = {
        "extra_body": {"top_k": 40, "metadata": {"user_id": "u1", "tag": "a"}, "max_tokens": 1000},
        "models": {"m": {"context_window": 32768, "extra_body": {"top_k": 20, "metadata": {"tag": "b"}}}},
    }
    body = body_for(table, max_tokens=64)
    assert (body["top_k"], body["metadata"], body["max_tokens"]) == (20, {"user_id": "u1", "tag": "b"}, 1000)
    assert (body["system"], body["stream"], body["model"]) == ("sys", True, "m")
    assert body_for(table, "other")["top_k"] == 40
    assert "extra_body" not in body_for({})


@pytest.mark.parametrize("key", ["model", "messages", "stream", "system", "tools"])
def test_fields_crab_builds_cannot_be_replaced(key: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings({"models": {"m": {"extra_body": {key: 1}}}})
    assert str(info.value) == (
        f"config: plugins.provider-anthropic.models.m.extra_body.{key}: expected a field other than "
        "model, messages, stream, system, tools (crab builds those itself), found 1"
    )


def test_a_value_json_cannot_carry_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings({"extra_body": {"top_p": float("nan")}})
    assert "config: plugins.provider-anthropic.extra_body.top_p: expected a finite number" in str(info.value)


def test_tool_choice_is_left_out_of_a_request_that_offers_no_tools() -> None:
    from crab import ToolSpec

    table = {"extra_body": {"tool_choice": {"type": "any"}}}
    assert "tool_choice" not in body_for(table)
    tools = (ToolSpec("read", "Read.", {"type": "object"}),)
    assert body_for(table, tools=tools)["tool_choice"] == {"type": "any"}
