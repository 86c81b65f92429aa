"""crab's ``thinking`` level (``ModelRequest.options["thinking"]``) on OpenAI-style servers: a reasoning
model gets ``reasoning_effort`` (openai-python's ``ReasoningEffort``: minimal, low, medium, high;
"Reasoning models" in OpenAI's guide), another server's model ``chat_template_kwargs.enable_thinking``
(llama.cpp's and vLLM's chat-template switch for Qwen3-style templates), and an OpenAI model that does
not reason nothing: the provider says it has no control there (``thinks``), so crab names it once."""

from __future__ import annotations

from typing import Any

import pytest
from crab import ModelRequest
from crab.messages import UserMessage
from crab_provider_openai.provider import OpenAIProvider
from crab_provider_openai.request import build_body
from crab_provider_openai.settings import parse_settings

OPENAI = parse_settings({})
LOCAL = parse_settings({"base_url": "http://127.0.0.1:1/v1"})


def body(model: str, level: str | None, settings: Any) -> dict[str, Any]:
    options = {"thinking": level} if level is not None else {}
    return build_body(ModelRequest(model, "", (UserMessage("hi"),), options=options), settings)


@pytest.mark.parametrize(
    ("model", "level", "fields"),
    [
        ("o3-mini", "high", {"reasoning_effort": "high"}),
        ("o4-mini", "low", {"reasoning_effort": "low"}),
        ("o3", "off", {}),  # the o-series cannot stop reasoning: its default stays
        ("gpt-5", "off", {"reasoning_effort": "minimal"}),
        ("openai/gpt-5-mini", "medium", {"reasoning_effort": "medium"}),
        ("gpt-4.1", "high", {}),
    ],
)
def test_openai_models(model: str, level: str, fields: dict[str, Any]) -> None:
    sent = body(model, level, OPENAI)
    assert {k: sent[k] for k in ("reasoning_effort", "chat_template_kwargs") if k in sent} == fields


def test_another_server_gets_the_chat_template_switch() -> None:
    assert body("qwen3-8b", "high", LOCAL)["chat_template_kwargs"] == {"enable_thinking": True}
    assert body("qwen3-8b", "off", LOCAL)["chat_template_kwargs"] == {"enable_thinking": False}
    assert "chat_template_kwargs" not in body("qwen3-8b", None, LOCAL)


def test_the_provider_says_where_the_level_reaches() -> None:
    openai = OpenAIProvider({})
    assert openai.thinks("o3-mini") and openai.thinks("gpt-5") and not openai.thinks("gpt-4.1")
    assert OpenAIProvider({"base_url": "http://127.0.0.1:1/v1"}).thinks("llama-3")
