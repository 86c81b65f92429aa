"""crab's ``thinking`` level (``ModelRequest.options["thinking"]``) on Anthropic: an extended-thinking
budget ("Building with extended thinking" in Anthropic's docs: ``thinking: {"type": "enabled",
"budget_tokens": N}``, N at least 1024 and below ``max_tokens``), ``off`` none, whatever
``[plugins.anthropic] thinking_budget`` says; models before Claude 3.7 have no thinking."""

from __future__ import annotations

from typing import Any

import pytest
from crab import ModelRequest
from crab.messages import UserMessage
from crab_provider_anthropic.provider import AnthropicProvider
from crab_provider_anthropic.request import build_body
from crab_provider_anthropic.settings import parse_settings


def body(level: str | None, table: dict[str, Any] | None = None) -> dict[str, Any]:
    options = {"thinking": level} if level is not None else {}
    request = ModelRequest("claude-sonnet-4-5", "", (UserMessage("hi"),), max_tokens=4096, options=options)
    return build_body(request, parse_settings(table or {}))


@pytest.mark.parametrize(("level", "budget"), [("low", 2048), ("medium", 8192), ("high", 24576)])
def test_a_level_is_a_thinking_budget(level: str, budget: int) -> None:
    sent = body(level)
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert sent["max_tokens"] > budget


def test_off_turns_a_configured_budget_off_and_no_level_keeps_it() -> None:
    assert "thinking" not in body("off", {"thinking_budget": 5000})
    assert body(None, {"thinking_budget": 5000})["thinking"]["budget_tokens"] == 5000


def test_older_models_have_no_thinking() -> None:
    provider = AnthropicProvider({})
    assert provider.thinks("claude-sonnet-4-5") and provider.thinks("claude-3-7-sonnet-latest")
    assert not provider.thinks("claude-3-5-haiku-latest")
