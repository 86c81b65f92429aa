"""llama.cpp's OpenAI-compatible server (llama-cpp-python) as recorded in the fixtures: each call
once although every chunk also carries the legacy ``function_call``; a tool-call reply replayed
with ``"content": ""`` (the recorded body the server accepts); ``extra_body`` reaching the server;
a stream the server ends without a chunk, said as such; a keyless 401 that says what to set.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crab import ModelRequest, ToolSpec
from crab.events import ErrorEvent, MessageEnd, StreamEvent, ToolCallEvent
from crab.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from crab.testing import CRAB, HttpReply, run_crab
from crab_provider_kit import SSEDecoder
from crab_provider_openai.parser import ChatStreamParser
from crab_provider_openai.provider import OpenAIProvider

FIXTURES = Path(__file__).parent / "fixtures"

Run = Callable[[OpenAIProvider, ModelRequest], tuple[list[StreamEvent], Exception | None]]
CALL_ID = "call__0_read_cmpl-7c1f4e2a-93d5-4b8e-a6f0-2d5c8e1b9a47"
ARGUMENTS = {"path": "src/crab_example/settings.py", "limit": 200}
READ = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
FORCE_READ = {"type": "function", "function": {"name": "read"}}


def parse(data: bytes) -> list[StreamEvent]:
    parser = ChatStreamParser("local")
    decoder = SSEDecoder()
    events: list[StreamEvent] = []
    for sse in decoder.feed(data):
        events.extend(parser.feed(sse))
    assert parser.done
    return events + parser.finish()


def test_function_call_beside_tool_calls_is_one_call(load_fixture: Callable[[str], bytes]) -> None:
    events = parse(load_fixture("llamacpp_python_tool_call.sse"))
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.id, c.name, c.arguments, c.parse_error) for c in calls] == [(CALL_ID, "read", ARGUMENTS, None)]
    end = events[-1]
    assert isinstance(end, MessageEnd)
    assert end.message.tool_calls == tuple(calls)
    assert end.message.stop_reason == "tool_use"
    assert end.message.content == ""


def test_the_legacy_field_alone_still_makes_a_call() -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"function_call": {"name": "glob", "arguments": '{"pattern": '}}}]},
        {"choices": [{"index": 0, "delta": {"function_call": {"arguments": '"*.py"}'}}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "function_call"}]},
    ]
    parser = ChatStreamParser("local")
    for chunk in chunks:
        parser.feed_chunk(chunk)
    (call,) = [e.call for e in parser.finish() if isinstance(e, ToolCallEvent)]
    assert (call.name, call.arguments) == ("glob", {"pattern": "*.py"})


def test_calls_that_share_an_id_get_ids_of_their_own() -> None:
    """Two indices with one id would leave one call without a result: the loop pairs by id."""
    parser = ChatStreamParser("local")
    for index, path in ((0, "a.py"), (1, "b.py")):
        call = {"index": index, "id": "call_0", "function": {"name": "read", "arguments": json.dumps({"path": path})}}
        parser.feed_chunk({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    calls = [e.call for e in parser.finish() if isinstance(e, ToolCallEvent)]
    assert [(c.id, c.arguments) for c in calls] == [("call_0", {"path": "a.py"}), ("call_0_2", {"path": "b.py"})]


def recorded_body(name: str) -> Any:
    """A recorded request body: the fixture's JSON, its ``#`` header dropped."""
    text = (FIXTURES / name).read_text()
    return json.loads("".join(line for line in text.splitlines(keepends=True) if not line.startswith("#")))


def test_tool_call_round_trip_sends_the_body_llamacpp_python_accepts(
    server: Any, make_provider: Any, run_stream: Run
) -> None:
    server.script(server.sse("llamacpp_python_tool_call.sse"), server.sse("llamacpp_python_answer.sse"))
    provider = make_provider(
        include_usage=False,
        extra_body={"tool_choice": FORCE_READ, "top_k": 40, "repeat_penalty": 1.1},
        models={"local": {"context_window": 32768, "extra_body": {"top_k": 20, "min_p": 0.05}}},
    )
    first = ModelRequest("local", "sys", (UserMessage("what does settings.py read?"),), (READ,), temperature=0.2)
    events, error = run_stream(provider, first)
    assert error is None
    end = events[-1]
    assert isinstance(end, MessageEnd)
    (call,) = end.message.tool_calls
    sent = server.requests[0].body
    # The model's extra_body wins over the table's, key by key; crab's own fields stay.
    assert (sent["tool_choice"], sent["top_k"], sent["min_p"], sent["repeat_penalty"]) == (FORCE_READ, 20, 0.05, 1.1)
    assert (sent["model"], sent["stream"], sent["temperature"]) == ("local", True, 0.2)
    assert "stream_options" not in sent

    result = ToolResultMessage(call.id, call.name, "[table]\nkey = 1")
    second = ModelRequest("local", "sys", (*first.messages, end.message, result), (READ,))
    events, error = run_stream(provider, second)
    assert error is None
    assert server.requests[1].body == recorded_body("llamacpp_python_followup.body")
    replayed = server.requests[1].body["messages"]
    assistant = replayed[2]
    # Missing, llama-cpp-python's template fails (HTTP 500); null, its request schema refuses it.
    assert (assistant["role"], assistant["content"]) == ("assistant", "")
    assert [c["id"] for c in assistant["tool_calls"]] == [CALL_ID]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == ARGUMENTS
    assert replayed[3] == {"role": "tool", "tool_call_id": CALL_ID, "content": "[table]\nkey = 1"}
    final = events[-1]
    assert isinstance(final, MessageEnd)
    assert final.message.content == "The settings module reads one table."


def test_an_assistant_reply_with_text_and_calls_keeps_its_text() -> None:
    from crab_provider_openai.request import message_to_openai

    call = ToolCall("c1", "read", {"path": "x"})
    assert message_to_openai(AssistantMessage("Let me look.", (call,)))["content"] == "Let me look."
    assert message_to_openai(AssistantMessage("", (call,)))["content"] == ""
    assert message_to_openai(AssistantMessage(""))["content"] == ""


def test_a_stream_the_server_ends_before_any_chunk_says_so(server: Any, make_provider: Any, run_stream: Run) -> None:
    """llama-cpp-python whose chat handler fails: HTTP 200, then the body ends with no chunk."""
    server.script(server.sse("llamacpp_python_failed_stream.sse"))
    events, error = run_stream(make_provider(), ModelRequest("local", "", (UserMessage("hi"),)))
    assert error is None
    (failure,) = events
    assert isinstance(failure, ErrorEvent)
    assert failure.kind == "stream"
    assert failure.message == (
        "openai: the stream (HTTP 200) ended without [DONE] and held no event: "
        "the server failed on this request (its own log says why)"
    )


def test_the_servers_own_words_outside_any_event_are_quoted(
    server: Any, make_provider: Any, run_stream: Run, api_key: str
) -> None:
    server.script(server.sse("error_field_no_done.sse"))
    events, _ = run_stream(make_provider(), ModelRequest("local", "", (UserMessage("hi"),)))
    (failure,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert failure.message == (
        "openai: the stream (HTTP 200) ended without [DONE]; the server said: error: "
        '{"code":500,"message":"failed to parse tool call arguments","type":"server_error"}; '
        "the partial reply was dropped"
    )
    assert not any(isinstance(e, MessageEnd | ToolCallEvent) for e in events)


def test_what_the_server_said_is_bounded_and_redacted(
    server: Any, make_provider: Any, run_stream: Run, api_key: str
) -> None:
    body = [f"oops: key {api_key} refused\n\n".encode(), *(b"x" * 200 + b"\n\n" for _ in range(50))]
    server.script(HttpReply(events=body))
    events, _ = run_stream(make_provider(), ModelRequest("local", "", (UserMessage("hi"),)))
    (failure,) = events
    assert isinstance(failure, ErrorEvent)
    assert api_key not in failure.message and "oops: key [redacted] refused" in failure.message
    assert len(failure.message) < 450


def test_a_keyless_401_says_to_set_api_key_env(server: Any, run_stream: Run) -> None:
    server.script(server.error(401, {"error": {"message": "Invalid API Key", "type": "invalid_request_error"}}))
    provider = OpenAIProvider({"base_url": server.url, "retry_base_delay": 0.01}, env={})
    _, error = run_stream(provider, ModelRequest("local", "", (UserMessage("hi"),)))
    assert error is not None
    assert "set  " not in str(error)
    assert "set api_key_env in [plugins.provider-openai]" in str(error)
    assert "authorization" not in server.requests[0].headers  # and no other key went there meanwhile


@pytest.mark.slow
@pytest.mark.skipif(CRAB is None, reason="the crab console script is not installed in this environment")
def test_crab_run_against_llamacpp_runs_each_call_once(server: Any, isolated_home: Path) -> None:
    """What the user met: every call ran twice, then the follow-up request got HTTP 500."""
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(
        "[plugins.provider-openai]\n"
        f'base_url = "{server.url}"\n'
        "include_usage = false\n"
        "retry_base_delay = 0.01\n"
        "extra_body = { top_k = 20, repeat_penalty = 1.1 }\n"
    )
    server.script(server.sse("llamacpp_python_tool_call.sse"), server.sse("llamacpp_python_answer.sse"))
    done = run_crab(isolated_home, "run", "what does settings.py read?", "--model", "openai/local", "--output", "jsonl")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    calls = [e["call"]["id"] for e in events if e.get("type") == "tool_call"]
    results = [e["call_id"] for e in events if e.get("type") == "tool_result"]
    assert calls == results == [CALL_ID]
    assert "The settings module reads one table." in done.stdout
    assert len(server.requests) == 2
    assert (server.requests[0].body["top_k"], server.requests[0].body["repeat_penalty"]) == (20, 1.1)
    replayed = server.requests[1].body["messages"]
    assert [m["role"] for m in replayed][-2:] == ["assistant", "tool"]
    assert replayed[-2]["content"] == ""
    assert [m.get("tool_call_id") for m in replayed if m["role"] == "tool"] == [CALL_ID]


@pytest.mark.slow
@pytest.mark.skipif(CRAB is None, reason="the crab console script is not installed in this environment")
def test_crab_run_keyless_401_names_api_key_env(server: Any, isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(
        f'[plugins.provider-openai]\nbase_url = "{server.url}"\nretry_base_delay = 0.01\n'
    )
    server.script(server.error(401, {"error": {"message": "Invalid API Key", "code": "invalid_api_key"}}))
    denied = run_crab(isolated_home, "run", "hi", "--model", "openai/local")
    assert denied.returncode != 0
    said = denied.stdout + denied.stderr
    assert "set api_key_env in [plugins.provider-openai]" in said
    assert "set  to" not in said
    assert "Traceback" not in said


@pytest.mark.slow
@pytest.mark.skipif(CRAB is None, reason="the crab console script is not installed in this environment")
def test_crab_run_says_the_server_failed_before_answering(server: Any, isolated_home: Path) -> None:
    """What the user met: only "the stream ended without [DONE]", with no hint where to look."""
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(
        f'[plugins.provider-openai]\nbase_url = "{server.url}"\nretry_base_delay = 0.01\n'
    )
    server.script(server.sse("llamacpp_python_failed_stream.sse"))
    failed = run_crab(isolated_home, "run", "hi", "--model", "openai/local")
    assert failed.returncode != 0
    said = failed.stdout + failed.stderr
    assert "(HTTP 200) ended without [DONE] and held no event: the server failed on this request" in said
    assert "Traceback" not in said
