"""An Anthropic-compatible proxy (LiteLLM's ``/v1/messages``) in front of llama.cpp, as recorded in
the fixtures: a call split over 23 ``tool_use`` blocks with one id is one call with one result, in
the events a renderer sees and in the history sent back; ``extra_body`` reaches the proxy; a
keyless 401 says what to set.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crab import ModelRequest, ToolSpec
from crab.events import MessageEnd, StreamEvent, ToolCallEvent
from crab.messages import ToolResultMessage, UserMessage
from crab.testing import CRAB, run_crab
from crab_provider_anthropic.parser import MessagesStreamParser
from crab_provider_anthropic.provider import AnthropicProvider
from crab_provider_kit import ServerSentEvent, SSEDecoder

Run = Callable[[AnthropicProvider, ModelRequest], tuple[list[StreamEvent], Exception | None]]
CALL_ID = "call__0_read_cmpl-7c1f4e2a-93d5-4b8e-a6f0-2d5c8e1b9a47"
ARGUMENTS = {"path": "src/crab_example/settings.py", "limit": 200}
READ = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})


def parse(data: bytes) -> list[StreamEvent]:
    parser = MessagesStreamParser("local")
    events: list[StreamEvent] = []
    for sse in SSEDecoder().feed(data):
        events.extend(parser.feed(sse))
    assert parser.done
    return events + parser.finish()


def feed(parser: MessagesStreamParser, *events: dict[str, Any]) -> list[StreamEvent]:
    out: list[StreamEvent] = []
    for event in events:
        out.extend(parser.feed(ServerSentEvent(data=json.dumps(event), event=str(event["type"]))))
    return out


def tool_block(index: int, call_id: str, name: str = "read") -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    return {"type": "content_block_start", "index": index, "content_block": block}


def json_delta(index: int, text: str) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": text}}


def test_blocks_repeating_the_id_continue_one_call(load_fixture: Callable[[str], bytes]) -> None:
    data = load_fixture("litellm_proxy_tool_use.sse")
    assert data.count(b"event: content_block_start") == 23  # what the proxy really sends
    events = parse(data)
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.id, c.name, c.arguments, c.parse_error) for c in calls] == [(CALL_ID, "read", ARGUMENTS, None)]
    end = events[-1]
    assert isinstance(end, MessageEnd)
    assert end.message.tool_calls == tuple(calls)
    assert end.message.stop_reason == "tool_use"


def test_the_same_id_after_another_block_or_with_another_name_is_a_call_of_its_own() -> None:
    """Only the block just before can be continued; any repeat after that gets an id of its own."""
    parser = MessagesStreamParser("m")
    feed(
        parser,
        tool_block(0, "toolu_1"),
        json_delta(0, '{"path": "a"}'),
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": "and"}},
        tool_block(2, "toolu_1"),
        json_delta(2, '{"path": "b"}'),
        tool_block(3, "toolu_1", name="write"),
        json_delta(3, '{"path": "c"}'),
        {"type": "message_stop"},
    )
    calls = [e.call for e in parser.finish() if isinstance(e, ToolCallEvent)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("toolu_1", "read", {"path": "a"}),
        ("toolu_1_2", "read", {"path": "b"}),
        ("toolu_1_3", "write", {"path": "c"}),
    ]


def test_round_trip_through_the_proxy_sends_one_tool_use_and_extra_body(
    server: Any, make_provider: Any, run_stream: Run
) -> None:
    server.script(server.sse("litellm_proxy_tool_use.sse"), server.sse("litellm_proxy_answer.sse"))
    provider = make_provider(
        extra_body={"tool_choice": {"type": "tool", "name": "read"}, "top_k": 40},
        models={"local": {"extra_body": {"top_k": 20}}},
    )
    first = ModelRequest("local", "sys", (UserMessage("what does settings.py read?"),), (READ,))
    events, error = run_stream(provider, first)
    assert error is None
    end = events[-1]
    assert isinstance(end, MessageEnd)
    (call,) = end.message.tool_calls
    sent = server.requests[0].body
    assert (sent["tool_choice"], sent["top_k"], sent["model"], sent["stream"]) == (
        {"type": "tool", "name": "read"},
        20,
        "local",
        True,
    )
    result = ToolResultMessage(call.id, call.name, "[table]")
    events, error = run_stream(provider, ModelRequest("local", "sys", (*first.messages, end.message, result), (READ,)))
    assert error is None
    replayed = server.requests[1].body["messages"]
    assert replayed[1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": CALL_ID, "name": "read", "input": ARGUMENTS}],
    }
    assert [b["tool_use_id"] for b in replayed[2]["content"]] == [CALL_ID]
    final = events[-1]
    assert isinstance(final, MessageEnd)
    assert final.message.content == "The settings module reads one table."


def test_a_keyless_401_says_to_set_api_key_env(server: Any, run_stream: Run) -> None:
    server.script(server.error(401, {"type": "error", "error": {"type": "authentication_error", "message": "no key"}}))
    provider = AnthropicProvider({"base_url": server.url, "retry_base_delay": 0.01}, env={})
    _, error = run_stream(provider, ModelRequest("local", "", (UserMessage("hi"),)))
    assert error is not None
    assert "set api_key_env in [plugins.provider-anthropic]" in str(error)
    assert "set  " not in str(error)
    assert "x-api-key" not in server.requests[0].headers


@pytest.mark.slow
@pytest.mark.skipif(CRAB is None, reason="the crab console script is not installed in this environment")
def test_crab_run_through_the_proxy_shows_one_call_and_one_result(server: Any, isolated_home: Path) -> None:
    """What the user met: 23 tool_call events with one id (each a JSON fragment) and 1 tool_result."""
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(
        "[plugins.provider-anthropic]\n"
        f'base_url = "{server.url}"\n'
        "require_key = false\n"
        "retry_base_delay = 0.01\n"
        'extra_body = { top_k = 20, tool_choice = { type = "auto" } }\n'
    )
    server.script(server.sse("litellm_proxy_tool_use.sse"), server.sse("litellm_proxy_answer.sse"))
    done = run_crab(
        isolated_home, "run", "what does settings.py read?", "--model", "anthropic/local", "--output", "jsonl"
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    calls = [e["call"] for e in events if e.get("type") == "tool_call"]
    results = [e["call_id"] for e in events if e.get("type") == "tool_result"]
    assert [(c["id"], c["arguments"]) for c in calls] == [(CALL_ID, ARGUMENTS)]
    assert results == [CALL_ID]
    assert "The settings module reads one table." in done.stdout
    first = server.requests[0].body
    assert first["top_k"] == 20
    # tool_choice only rides along when tools are offered (none are, with only core installed)
    assert first.get("tool_choice") == ({"type": "auto"} if first.get("tools") else None)
    tool_uses = [b for b in server.requests[1].body["messages"][1]["content"] if b["type"] == "tool_use"]
    assert [(b["id"], b["input"]) for b in tool_uses] == [(CALL_ID, ARGUMENTS)]


def test_a_block_started_again_at_the_same_index_loses_nothing() -> None:
    parser = MessagesStreamParser("m")
    feed(
        parser,
        tool_block(0, "toolu_1"),
        json_delta(0, '{"path": '),
        tool_block(0, "toolu_1"),
        json_delta(0, '"a"}'),
        tool_block(0, "toolu_2"),
        json_delta(0, "{}"),
        {"type": "message_stop"},
    )
    calls = [e.call for e in parser.finish() if isinstance(e, ToolCallEvent)]
    # The same id continues the call; a new id at a used index is a call of its own.
    assert [(c.id, c.arguments) for c in calls] == [("toolu_1", {"path": "a"}), ("toolu_2", {})]
