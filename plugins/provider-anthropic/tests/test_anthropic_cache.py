"""Prompt-cache marks on the Messages API: where ``cache_control`` goes (tools, system, the end of
the previous request's messages, the end of this one), never more than four, never on thinking,
none below the model's minimum, the 1-hour ttl, ``cache = false``, and the one fallback for a
server that refuses them. Request bodies are the ones crab sent to ``crab.testing.ReplayServer``.

The refusal's wire format is Anthropic's error body (``{"type": "error", "error": {"type":
"invalid_request_error", "message": ...}}``, https://docs.anthropic.com/en/api/errors); its message
is in the words the Messages API's request validation uses for a field it does not take
("<path>: Extra inputs are not permitted"), as servers speaking the API without prompt caching
answer ``cache_control``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from crab import ConfigError, ModelRequest, ToolSpec
from crab.events import MessageEnd, RetryEvent
from crab.messages import AssistantMessage, Message, Thinking, ToolCall, ToolResultMessage, UserMessage
from crab.testing import ReplayServer
from crab_provider_anthropic.cache import MAX_BREAKPOINTS, place_breakpoints
from crab_provider_anthropic.provider import AnthropicProvider
from crab_provider_anthropic.request import build_body
from crab_provider_anthropic.settings import parse_settings

MODEL = "claude-sonnet-4-5"
LONG_SYSTEM = "You are crab, a careful coding agent. " * 200  # about 1,900 tokens: above 1,024


def tools(repeat: int) -> tuple[ToolSpec, ...]:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    return tuple(ToolSpec(n, f"{n}: " + "what it does. " * repeat, schema) for n in ("ls", "read", "grep", "edit"))


TOOLS = tools(80)  # about 1,200 tokens: the tools alone are worth a mark
SHORT_TOOLS = tools(5)
REFUSAL = {
    "type": "error",
    "error": {"type": "invalid_request_error", "message": "system.0.cache_control: Extra inputs are not permitted"},
}


def marked(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """Every ``cache_control`` in ``body``: where it is and what it says."""
    found: list[tuple[str, Any]] = []
    for i, tool in enumerate(body.get("tools") or []):
        if "cache_control" in tool:
            found.append((f"tools.{i}", tool["cache_control"]))
    system = body.get("system")
    for i, block in enumerate(system if isinstance(system, list) else []):
        if "cache_control" in block:
            found.append((f"system.{i}", block["cache_control"]))
    for m, message in enumerate(body["messages"]):
        for b, block in enumerate(message["content"]):
            if "cache_control" in block:
                found.append((f"messages.{m}.{b}", block["cache_control"]))
    return found


def tool_loop(steps: int, calls_per_step: int) -> Iterator[tuple[Message, ...]]:
    """The histories of a tool loop: each reply thinks, then makes ``calls_per_step`` calls."""
    history: list[Message] = [UserMessage("fix the failing test")]
    yield tuple(history)
    for step in range(steps):
        calls = tuple(ToolCall(f"toolu_{step}_{n}", "read", {"path": f"f{n}.py"}) for n in range(calls_per_step))
        thought = Thinking("plan", signature=f"sig-{step}")
        history.append(AssistantMessage(thinking=(thought,), tool_calls=calls, stop_reason="tool_use"))
        history.extend(ToolResultMessage(c.id, "read", f"contents of {c.arguments['path']} " * 30) for c in calls)
        yield tuple(history)


def send(provider: AnthropicProvider, run_stream: Callable[..., Any], request: ModelRequest) -> list[Any]:
    events, error = run_stream(provider, request)
    assert error is None, error
    return list(events)


def test_marks_the_tools_the_system_prompt_and_the_latest_messages(
    server: ReplayServer, make_provider: Callable[..., AnthropicProvider], run_stream: Callable[..., Any]
) -> None:
    history = list(tool_loop(2, 2))[-1]
    server.script(server.sse("text_usage.sse"))
    send(make_provider(), run_stream, ModelRequest(MODEL, LONG_SYSTEM, history, TOOLS, session_id="s1"))
    body = server.requests[0].body
    assert body["system"] == [{"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral"}}]
    messages = body["messages"]
    # user, assistant, user (results), assistant, user (results): the previous request ended at
    # the first round's last result, this one at the second round's.
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert [where for where, _ in marked(body)] == ["tools.3", "system.0", "messages.2.1", "messages.4.1"]
    assert all(mark == {"type": "ephemeral"} for _, mark in marked(body))
    assert "anthropic-beta" not in server.requests[0].headers


def test_never_more_than_four_marks_and_never_on_thinking() -> None:
    settings = parse_settings({})
    for history in tool_loop(6, 3):
        body = build_body(ModelRequest(MODEL, LONG_SYSTEM, history, TOOLS), settings)
        assert len(marked(body)) <= MAX_BREAKPOINTS
        for message in body["messages"]:
            for block in message["content"]:
                if block["type"] in ("thinking", "redacted_thinking"):
                    assert "cache_control" not in block
    # A body whose latest block is thinking: the mark goes to the last block that may carry one.
    body = {
        "system": LONG_SYSTEM,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}, {"type": "redacted_thinking", "data": "x"}],
            },
        ],
    }
    place_breakpoints(body, ttl="5m", min_tokens=1024)
    assert "cache_control" not in body["messages"][1]["content"][1]
    assert body["messages"][1]["content"][0]["cache_control"] == {"type": "ephemeral"}


def test_no_mark_on_a_prefix_below_the_models_minimum() -> None:
    settings = parse_settings({})
    short = ModelRequest(MODEL, "You are crab.", (UserMessage("hi"),), SHORT_TOOLS)
    body = build_body(short, settings)
    assert marked(body) == []
    assert body["system"] == "You are crab."
    # About 1,900 tokens: enough for Sonnet (1,024), not for Haiku 4.5 (4,096).
    long = ModelRequest(MODEL, LONG_SYSTEM, (UserMessage("hi"),))
    assert [w for w, _ in marked(build_body(long, settings))] == ["system.0", "messages.0.0"]
    haiku = ModelRequest("claude-haiku-4-5", LONG_SYSTEM, (UserMessage("hi"),))
    assert marked(build_body(haiku, settings)) == []
    # The tools alone are short: the first prefix that reaches the minimum is the system prompt's.
    request = ModelRequest(MODEL, LONG_SYSTEM, (UserMessage("hi"),), SHORT_TOOLS)
    assert [w for w, _ in marked(build_body(request, settings))] == ["system.0", "messages.0.0"]


def test_a_dated_model_id_has_its_aliass_minimum() -> None:
    """Anthropic's model ids carry a date (``claude-haiku-4-5-20251001``, the id its model list
    gives); the alias's minimum applies to it, so no mark on a prefix Haiku 4.5 would not cache.
    (Red team: a dated id fell back to 1,024 tokens.)"""
    settings = parse_settings({})
    for dated, alias in (
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-3-5-haiku-20241022", "claude-3-5-haiku-latest"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
    ):
        assert settings.min_cache_tokens(dated) == settings.min_cache_tokens(alias), dated
    haiku = ModelRequest("claude-haiku-4-5-20251001", LONG_SYSTEM, (UserMessage("hi"),))
    assert marked(build_body(haiku, settings)) == []


class PromptCache:
    """Anthropic's cache rules, for checking what marks buy: a mark writes the exact prefix up to
    it; a mark reads the longest cached prefix ending at it or at most 20 blocks before it."""

    LOOKBACK = 20

    def __init__(self) -> None:
        self.cached: set[str] = set()

    def request(self, body: dict[str, Any]) -> tuple[int, int]:
        """``(blocks read from the cache, blocks in the request)`` for one request body."""
        blocks: list[Any] = [*(body.get("tools") or []), *(body.get("system") or [])]
        for message in body["messages"]:
            blocks.extend({**b, "role": message["role"]} for b in message["content"])
        digests = []
        running = hashlib.sha256()
        for block in blocks:
            running.update(json.dumps({k: v for k, v in block.items() if k != "cache_control"}).encode())
            digests.append(running.copy().hexdigest())
        marks = [i for i, b in enumerate(blocks) if "cache_control" in b]
        read = 0
        for mark in marks:
            for position in range(mark, max(-1, mark - self.LOOKBACK - 1), -1):
                if digests[position] in self.cached:
                    read = max(read, position + 1)
                    break
        self.cached.update(digests[m] for m in marks)
        return read, len(blocks)


def test_a_long_tool_loop_reads_the_whole_previous_request_from_the_cache(
    server: ReplayServer, make_provider: Callable[..., AnthropicProvider], run_stream: Callable[..., Any]
) -> None:
    """Each round adds 25 blocks (a reply of a thought and 12 calls, 12 results), more than the
    20-block lookback: a single mark on the latest block would find nothing after the first
    round; the mark at the previous request's end reads all of it back."""
    provider = make_provider()
    histories = list(tool_loop(8, 12))
    server.script(*(server.sse("text_usage.sse") for _ in histories))
    for history in histories:
        send(provider, run_stream, ModelRequest(MODEL, LONG_SYSTEM, history, TOOLS, session_id="loop"))
    cache = PromptCache()
    previous_length = 0
    for number, recorded in enumerate(server.requests):
        read, length = cache.request(recorded.body)
        assert len(marked(recorded.body)) <= MAX_BREAKPOINTS
        if number:
            assert read == previous_length, f"request {number + 1} read {read} of the {previous_length} before it"
        previous_length = length


def test_one_hour_ttl_marks_every_block_and_sends_the_beta(
    server: ReplayServer, make_provider: Callable[..., AnthropicProvider], run_stream: Callable[..., Any]
) -> None:
    server.script(server.sse("text_usage.sse"))
    provider = make_provider(cache_ttl="1h", headers={"anthropic-beta": "interleaved-thinking-2025-05-14"})
    history = list(tool_loop(1, 1))[-1]
    send(provider, run_stream, ModelRequest(MODEL, LONG_SYSTEM, history, TOOLS, session_id="s1"))
    recorded = server.requests[0]
    assert {json.dumps(mark) for _, mark in marked(recorded.body)} == {json.dumps({"type": "ephemeral", "ttl": "1h"})}
    assert recorded.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14,extended-cache-ttl-2025-04-11"
    info = {m.id: m for m in provider.models()}
    # The provider's table is Anthropic's only for its own URL; the prices come from the settings.
    assert info == {}
    own = {m.id: m for m in AnthropicProvider({"cache_ttl": "1h"}).models()}["claude-sonnet-4-5"]
    assert (own.input_price, own.cache_read_price, own.cache_write_price) == (3.0, 0.3, 6.0)
    five = {m.id: m for m in AnthropicProvider({}).models()}["claude-sonnet-4-5"]
    assert (five.cache_read_price, five.cache_write_price) == (0.3, 3.75)


def test_cache_false_sends_no_mark(
    server: ReplayServer, make_provider: Callable[..., AnthropicProvider], run_stream: Callable[..., Any]
) -> None:
    server.script(server.sse("text_usage.sse"))
    history = list(tool_loop(2, 2))[-1]
    send(make_provider(cache=False, cache_ttl="1h"), run_stream, ModelRequest(MODEL, LONG_SYSTEM, history, TOOLS))
    recorded = server.requests[0]
    assert "cache_control" not in json.dumps(recorded.body)
    assert recorded.body["system"] == LONG_SYSTEM
    assert "anthropic-beta" not in recorded.headers


def test_a_server_that_refuses_the_marks_gets_the_request_again_without_them_once_per_session(
    server: ReplayServer, make_provider: Callable[..., AnthropicProvider], run_stream: Callable[..., Any]
) -> None:
    provider = make_provider()
    request = ModelRequest(MODEL, LONG_SYSTEM, (UserMessage("hi"),), TOOLS, session_id="s1")
    server.script(server.error(400, REFUSAL), server.sse("text_usage.sse"))
    events = send(provider, run_stream, request)
    (notice,) = [e for e in events if isinstance(e, RetryEvent)]
    assert "cache_control: Extra inputs are not permitted" in notice.reason
    assert "without prompt-cache fields" in notice.reason and "cache = false" in notice.reason
    assert isinstance(events[-1], MessageEnd)
    first, again = server.requests
    assert marked(first.body) and "cache_control" not in json.dumps(again.body)
    # Remembered for the session: its next request goes without marks at once, and no notice.
    server.script(server.sse("text_usage.sse"))
    events = send(provider, run_stream, request)
    assert not [e for e in events if isinstance(e, RetryEvent)]
    assert len(server.requests) == 3 and "cache_control" not in json.dumps(server.requests[2].body)
    # Another session tries the marks again.
    server.script(server.sse("text_usage.sse"))
    send(provider, run_stream, ModelRequest(MODEL, LONG_SYSTEM, (UserMessage("hi"),), TOOLS, session_id="s2"))
    assert marked(server.requests[3].body)


def test_a_400_that_names_no_cache_field_is_not_retried(
    server: ReplayServer, make_provider: Callable[..., AnthropicProvider], run_stream: Callable[..., Any]
) -> None:
    other = {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: must be positive"}}
    server.script(server.error(400, other))
    events, error = run_stream(make_provider(), ModelRequest(MODEL, LONG_SYSTEM, (UserMessage("hi"),), session_id="s"))
    assert error is not None and "max_tokens" in str(error)
    assert len(server.requests) == 1 and not [e for e in events if isinstance(e, RetryEvent)]


def test_a_bad_cache_ttl_is_one_line_naming_the_key() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_settings({"cache_ttl": "10m"})
    assert "cache_ttl" in str(caught.value) and "\n" not in str(caught.value)
