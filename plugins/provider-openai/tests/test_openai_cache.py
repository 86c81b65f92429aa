"""Prompt caching on chat completions: the per-session ``prompt_cache_key`` (a hash, stable in a
session, different across sessions, off for servers that are not OpenAI's unless asked), the
``cache_control`` marks a gateway fronting Claude takes, cache usage as OpenRouter reports it, and
the one fallback for a server that refuses the fields. Request bodies are the ones crab sent to
``crab.testing.ReplayServer``.

The refusal's wire format is OpenAI's error body (``{"error": {"message", "type", "param",
"code"}}``, https://platform.openai.com/docs/guides/error-codes) with the message OpenAI's API
gives a request field it does not know ("Unrecognized request argument supplied: <name>").
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crab import ModelRequest, ToolSpec
from crab.events import MessageEnd, RetryEvent
from crab.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from crab.testing import CRAB, ReplayServer, run_crab
from crab_provider_openai.cache import prompt_cache_key
from crab_provider_openai.provider import OpenAIProvider
from crab_provider_openai.request import build_body
from crab_provider_openai.settings import parse_settings, trust_filter

LONG_SYSTEM = "You are crab, a careful coding agent. " * 200  # about 1,900 tokens
TOOL = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
HISTORY = (
    UserMessage("fix it"),
    AssistantMessage(tool_calls=(ToolCall("call_1", "read", {"path": "a.py"}),), stop_reason="tool_use"),
    ToolResultMessage("call_1", "read", "print('a')"),
)
REFUSAL = {
    "error": {
        "message": "Unrecognized request argument supplied: prompt_cache_key",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
}


def cache_marks(body: dict[str, Any]) -> list[str]:
    """Where ``body``'s messages carry ``cache_control``: ``"<index>:<role>"``."""
    found = []
    for index, message in enumerate(body["messages"]):
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if "cache_control" in part:
                assert part["cache_control"] == {"type": "ephemeral"} and part["type"] == "text"
                found.append(f"{index}:{message['role']}")
    return found


def send(provider: OpenAIProvider, run_stream: Callable[..., Any], request: ModelRequest) -> list[Any]:
    events, error = run_stream(provider, request)
    assert error is None, error
    return list(events)


def test_prompt_cache_key_is_stable_in_a_session_and_differs_across_sessions(
    server: ReplayServer, make_provider: Callable[..., OpenAIProvider], run_stream: Callable[..., Any]
) -> None:
    provider = make_provider(cache_key=True)
    server.script(*(server.sse("text_usage.sse") for _ in range(3)))
    for session in ("20261206T070000-aaaaaa", "20261206T070000-aaaaaa", "20261206T070500-bbbbbb"):
        send(provider, run_stream, ModelRequest("gpt-4.1", "sys", HISTORY, (TOOL,), session_id=session))
    keys = [r.body["prompt_cache_key"] for r in server.requests]
    assert keys[0] == keys[1] != keys[2]
    assert all(k.startswith("crab-") and "aaaaaa" not in k and "bbbbbb" not in k for k in keys)  # hashed
    assert keys[0] == prompt_cache_key("20261206T070000-aaaaaa")
    assert cache_marks(server.requests[0].body) == []  # a GPT model behind this server: no Claude marks


def test_prompt_cache_key_defaults_to_openais_own_url_and_turns_off() -> None:
    request = ModelRequest("gpt-4.1", "sys", HISTORY, session_id="s1")
    assert "prompt_cache_key" in build_body(request, parse_settings({}))
    assert "prompt_cache_key" not in build_body(request, parse_settings({"cache_key": False}))
    local = parse_settings({"base_url": "http://127.0.0.1:8080/v1"}, "local")
    assert "prompt_cache_key" not in build_body(request, local)
    assert "prompt_cache_key" not in build_body(ModelRequest("gpt-4.1", "sys", HISTORY), parse_settings({}))


def test_a_gateway_fronting_claude_gets_anthropic_marks(
    server: ReplayServer, make_provider: Callable[..., OpenAIProvider], run_stream: Callable[..., Any]
) -> None:
    server.script(server.sse("openrouter_claude_cache.sse"))
    request = ModelRequest("anthropic/claude-sonnet-4.5", LONG_SYSTEM, HISTORY, (TOOL,), session_id="s1")
    events = send(make_provider(), run_stream, request)
    body = server.requests[0].body
    # The system prompt, the end of the previous request (the user's prompt), the last tool result.
    assert cache_marks(body) == ["0:system", "1:user", "3:tool"]
    assert body["messages"][3]["content"] == [
        {"type": "text", "text": "print('a')", "cache_control": {"type": "ephemeral"}}
    ]
    assert "prompt_cache_key" not in body  # not OpenAI's URL
    usage = events[-1].message.usage
    assert isinstance(events[-1], MessageEnd) and usage is not None
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (20, 3000, 500)


def test_no_claude_marks_when_turned_off_for_other_models_or_below_the_minimum() -> None:
    claude = ModelRequest("anthropic/claude-sonnet-4.5", LONG_SYSTEM, HISTORY, session_id="s1")
    gateway = {"base_url": "http://127.0.0.1:4000/v1"}
    assert cache_marks(build_body(claude, parse_settings(gateway, "gw"))) == ["0:system", "1:user", "3:tool"]
    assert cache_marks(build_body(claude, parse_settings({**gateway, "cache_control": False}, "gw"))) == []
    gpt = ModelRequest("gpt-4.1", LONG_SYSTEM, HISTORY, session_id="s1")
    assert cache_marks(build_body(gpt, parse_settings(gateway, "gw"))) == []
    assert cache_marks(build_body(gpt, parse_settings({**gateway, "cache_control": True}, "gw"))) != []
    short = ModelRequest("anthropic/claude-sonnet-4.5", "sys", HISTORY, session_id="s1")
    assert cache_marks(build_body(short, parse_settings(gateway, "gw"))) == []


def test_a_server_that_refuses_the_key_gets_the_request_again_without_it_once_per_session(
    server: ReplayServer, make_provider: Callable[..., OpenAIProvider], run_stream: Callable[..., Any]
) -> None:
    provider = make_provider(cache_key=True)
    request = ModelRequest("gpt-4.1", "sys", HISTORY, session_id="s1")
    server.script(server.error(400, REFUSAL), server.sse("text_usage.sse"))
    events = send(provider, run_stream, request)
    (notice,) = [e for e in events if isinstance(e, RetryEvent)]
    assert "Unrecognized request argument supplied: prompt_cache_key" in notice.reason
    assert "cache_key = false" in notice.reason
    assert isinstance(events[-1], MessageEnd)
    first, again = server.requests
    assert "prompt_cache_key" in first.body and "prompt_cache_key" not in again.body
    server.script(server.sse("text_usage.sse"))
    events = send(provider, run_stream, request)
    assert not [e for e in events if isinstance(e, RetryEvent)]
    assert len(server.requests) == 3 and "prompt_cache_key" not in server.requests[2].body
    server.script(server.sse("text_usage.sse"))
    send(provider, run_stream, ModelRequest("gpt-4.1", "sys", HISTORY, session_id="s2"))
    assert "prompt_cache_key" in server.requests[3].body
    assert "cache_control" not in json.dumps([r.body for r in server.requests])


@pytest.mark.slow
@pytest.mark.skipif(CRAB is None, reason="the crab console script is not installed in this environment")
@pytest.mark.skipif(
    importlib.util.find_spec("crab_tape_jsonl") is None, reason="no session store that outlives a process is installed"
)
def test_the_key_is_the_sessions_from_one_process_to_the_next(server: ReplayServer, isolated_home: Path) -> None:
    """``crab run`` then ``crab run --session ID`` (a new process, the same session) send the same
    key; a new session another."""
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(
        f'[plugins.provider-openai.endpoints.local]\nbase_url = "{server.url}"\ncache_key = true\n'
    )
    server.script(*(server.sse("text_usage.sse") for _ in range(3)))
    args = ("--model", "local/gpt-4.1", "--output", "json")
    first_run = run_crab(isolated_home, "run", "hi", *args)
    assert first_run.returncode == 0, first_run.stderr
    session = json.loads(first_run.stdout)["session_id"]
    for extra in (("--session", session), ()):
        done = run_crab(isolated_home, "run", *extra, "hi", *args)
        assert done.returncode == 0, done.stderr
    first, continued, fresh = (r.body["prompt_cache_key"] for r in server.requests)
    assert first == continued != fresh
    assert len(server.requests[1].body["messages"]) > len(server.requests[0].body["messages"])  # it did continue


def test_a_project_cannot_set_an_endpoints_cache_keys() -> None:
    """They are trust-only in the main table (its ``Setting``s say so); an endpoint's nested table
    is filtered by hand."""
    trusted = {"endpoints": {"gw": {"base_url": "http://127.0.0.1:4000/v1"}}}
    project = {"endpoints": {"gw": {"cache_key": True, "cache_control": False, "include_usage": False}}}
    drops = trust_filter(project, trusted)
    assert ("endpoints", "gw", "cache_key") in drops and ("endpoints", "gw", "cache_control") in drops
    assert ("endpoints", "gw", "include_usage") not in drops
