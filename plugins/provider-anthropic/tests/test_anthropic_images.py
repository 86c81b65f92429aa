"""Images in requests: the body crab sends equals the recorded one (fixtures/images_request.json,
sources in fixtures/README.md), and a model the provider knows reads no images is refused in one
line before any HTTP call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from crab import ConfigError, ModelRequest, ProviderError
from crab.messages import UserMessage
from crab.testing import image_history
from crab_provider_anthropic.settings import parse_settings

FIXTURES = Path(__file__).parent / "fixtures"
HISTORY = image_history()


def test_the_request_with_images_is_the_recorded_one(server: Any, make_provider: Any, run_stream: Any) -> None:
    server.script(server.sse("text_usage.sse"))
    # Without cache marks: this checks the images' shape (the marks' places are test_anthropic_cache's).
    _, error = run_stream(make_provider(cache=False), ModelRequest("claude-sonnet-4-5", "", HISTORY, max_tokens=64))
    assert error is None
    recorded = json.loads((FIXTURES / "images_request.json").read_text())
    assert server.requests[0].body["messages"] == recorded["messages"]


def test_a_model_configured_without_vision_is_refused_before_any_request(
    server: Any, make_provider: Any, run_stream: Any
) -> None:
    provider = make_provider(models={"local-text": {"vision": False}})
    _, error = run_stream(provider, ModelRequest("local-text", "", HISTORY[:1], max_tokens=64))
    assert isinstance(error, ProviderError) and error.kind == "invalid_request"
    assert str(error).startswith("model local-text does not read images")
    assert 'models."local-text".vision = false' in str(error) and "\n" not in str(error)
    assert server.requests == []
    # Text alone still goes to that model.
    server.script(server.sse("text_usage.sse"))
    _, error = run_stream(provider, ModelRequest("local-text", "", (UserMessage("hi"),), max_tokens=64))
    assert error is None and len(server.requests) == 1


def test_the_built_in_table_knows_which_models_read_images() -> None:
    settings = parse_settings({})
    assert settings.model_info("claude-sonnet-4-5").vision is True  # type: ignore[union-attr]
    assert settings.model_info("claude-2.1").vision is False  # type: ignore[union-attr]
    assert parse_settings({"base_url": "http://127.0.0.1:1/v1"}).model_info("claude-2.1") is None  # unknown: sent


def test_vision_must_be_true_or_false() -> None:
    with pytest.raises(ConfigError, match="vision"):
        parse_settings({"models": {"m": {"vision": "yes"}}})
