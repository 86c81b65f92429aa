"""The Claude Code events crab-hooks added to its first five, each in a real agent (scripted
provider, real hook processes, a real HTTP server on 127.0.0.1), with the reference's own examples
(``hooks_reference_examples``) as what the hooks print and as the fields crab must send."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import crab
import hooks_reference_examples as ref
import pytest
from crab.events import CompactionEvent, NoticeEvent, ToolResultEvent
from crab.messages import UserMessage
from crab.testing import AgentHarness
from crab_hooks import HooksPlugin

DEADLINE = 30.0


def _one(event: str, command: str, matcher: str = "", **extra: object) -> dict[str, object]:
    return {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command, **extra}]}]}


def _harness(events: dict[str, object], plugin: Any, replies: list[object], workspace: Path) -> AgentHarness:
    return AgentHarness(
        replies,
        plugins={"hooks": HooksPlugin(), "fake": plugin},
        config={"plugins.hooks.events": events},
        workspace=workspace,
    )


def _recorder(hook_script: Any, tmp_path: Path, name: str, then: str = "") -> tuple[str, Path]:
    """A hook that appends each input it gets to ``name.jsonl`` (one line each), then runs ``then``."""
    seen = tmp_path / f"{name}.jsonl"
    body = f"data = sys.stdin.read()\nopen({str(seen)!r}, 'a').write(json.dumps(json.loads(data)) + '\\n')\n" + then
    return hook_script(name, body), seen


def _printer(hook_script: Any, name: str, output: str) -> str:
    """A hook that prints ``output`` (a reference example) as it is."""
    return hook_script(name, f"sys.stdin.read()\nprint({output!r})\n")


def _inputs(path: Path, count: int = 1) -> list[dict[str, Any]]:
    """The inputs a recorder got, once there are ``count`` (background hooks finish after the turn)."""
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        if path.exists():
            lines = path.read_text().splitlines()
            if len(lines) >= count:
                return [json.loads(line) for line in lines]
        time.sleep(0.05)
    raise AssertionError(f"{path.name}: fewer than {count} hook runs within {DEADLINE} s")


class Tools:
    """``bash`` that fails when its command says so, and ``agent`` that runs a child agent."""

    def __init__(self) -> None:
        self.children: list[str] = []

    @crab.hookimpl
    def crab_tools(self) -> list[crab.Tool]:
        children = self.children

        @crab.tool(name="bash")
        def bash(command: str) -> crab.ToolResult:
            """Run nothing; fail for `false`."""
            if command == "false":
                return crab.ToolResult("Command exited with non-zero status code 1", is_error=True)
            return crab.ToolResult(f"ran: {command}")

        @crab.tool(name="agent")
        async def agent(prompt: str, ctx: crab.ToolContext) -> str:
            """Run a child agent."""
            assert ctx.handle is not None
            outcome = await ctx.handle.run_child(ctx, prompt, label="Explore")
            children.append(outcome.text)
            return outcome.text

        return [bash, agent]


@pytest.fixture
def tools() -> Tools:
    return Tools()


def test_post_tool_use_failure_runs_for_a_failed_call_and_its_context_reaches_the_model(hook_script, tools, tmp_path):
    recorder, seen = _recorder(hook_script, tmp_path, "failure")
    printer = _printer(hook_script, "failure-context", ref.POST_TOOL_USE_FAILURE_OUTPUT)
    post, post_seen = _recorder(hook_script, tmp_path, "post")
    events = {
        "PostToolUseFailure": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": c} for c in (recorder, printer)]}
        ],
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": post}]}],
    }
    replies = [[{"tool": "bash", "args": {"command": "false"}}], [{"tool": "bash", "args": {"command": "ls"}}]]
    harness = _harness(events, tools, [*replies, [{"text": "d"}]], tmp_path)
    try:
        harness.run("go")
        failed, passed = harness.events_of(ToolResultEvent)
        assert failed.is_error
        assert "[PostToolUseFailure hook] Additional information about the failure for Claude" in failed.content
        [event] = _inputs(seen)
        assert ref.fields(ref.POST_TOOL_USE_FAILURE_INPUT) <= set(event)
        assert event["hook_event_name"] == "PostToolUseFailure"
        assert event["error"] == "Command exited with non-zero status code 1" and event["is_interrupt"] is False
        assert "tool_response" not in event
        [after] = _inputs(post_seen)  # PostToolUse only for the call that succeeded
        assert after["tool_input"] == {"command": "ls"}
        assert "PostToolUseFailure" not in passed.content
    finally:
        harness.close()


def test_stop_gets_the_last_assistant_message(hook_script, tools, tmp_path):
    recorder, seen = _recorder(hook_script, tmp_path, "stop")
    harness = _harness(_one("Stop", recorder), tools, [[{"text": "I've completed the refactoring."}]], tmp_path)
    try:
        harness.run("go")
        [event] = _inputs(seen)
        assert ref.fields(ref.STOP_INPUT) <= set(event)
        assert event["last_assistant_message"] == "I've completed the refactoring."
    finally:
        harness.close()


def test_subagent_start_and_stop_run_for_a_child_agent_and_subagent_stop_can_keep_it_going(
    hook_script, tools, tmp_path
):
    start_seen = tmp_path / "start.jsonl"
    start = hook_script(
        "start",
        f"open({str(start_seen)!r}, 'a').write(json.dumps(json.load(sys.stdin)) + '\\n')\n"
        f"print({ref.SUBAGENT_START_OUTPUT!r})\n",
    )
    stop_seen = tmp_path / "stop.jsonl"
    stop = hook_script(
        "substop",
        "event = json.load(sys.stdin)\n"
        f"open({str(stop_seen)!r}, 'a').write(json.dumps(event) + '\\n')\n"
        f"if not event['stop_hook_active']:\n    print({ref.STOP_BLOCK_OUTPUT!r})\n",
    )
    main_stop, main_seen = _recorder(hook_script, tmp_path, "mainstop")
    prompt, prompt_seen = _recorder(hook_script, tmp_path, "prompt")
    events = {
        **_one("SubagentStart", start, matcher="Explore"),
        **_one("SubagentStop", stop, matcher="Explore"),
        **_one("Stop", main_stop),
        **_one("UserPromptSubmit", prompt),
    }
    replies = [
        [{"tool": "agent", "args": {"prompt": "find the endpoints"}}],
        [{"text": "Analysis complete."}],
        [{"text": "Analysis complete. Found 3 potential issues..."}],
        [{"text": "done"}],
    ]
    harness = _harness(events, tools, replies, tmp_path)
    try:
        assert harness.run("go").text == "done"
        assert tools.children == ["Analysis complete. Found 3 potential issues..."]
        [started] = _inputs(start_seen)
        assert ref.fields(ref.SUBAGENT_START_INPUT) <= set(started)
        assert started["agent_type"] == "Explore" and started["agent_id"] != harness.session.id
        first, second = _inputs(stop_seen, 2)
        assert ref.fields(ref.SUBAGENT_STOP_INPUT) <= set(first)
        assert (first["stop_hook_active"], second["stop_hook_active"]) == (False, True)
        assert first["agent_id"] == started["agent_id"] and first["agent_type"] == "Explore"
        assert second["last_assistant_message"] == "Analysis complete. Found 3 potential issues..."
        # the child's second request carries the block's reason; its first, SubagentStart's context
        child_first, child_second = harness.requests[1], harness.requests[2]
        said = [m.content for m in child_first.messages if isinstance(m, UserMessage)]
        assert "Follow security guidelines for this task" in said
        said = [m.content for m in child_second.messages if isinstance(m, UserMessage)]
        assert any("Must be provided when Claude is blocked from stopping" in str(m) for m in said)
        # the main session's Stop and UserPromptSubmit ran once each, never for the child
        assert [e["hook_event_name"] for e in _inputs(main_seen)] == ["Stop"]
        assert [e["prompt"] for e in _inputs(prompt_seen)] == ["go"]
    finally:
        harness.close()


def test_pre_and_post_compact_run_around_a_manual_compaction(hook_script, tools, tmp_path):
    pre, pre_seen = _recorder(hook_script, tmp_path, "pre")
    post, post_seen = _recorder(hook_script, tmp_path, "post")
    events = {**_one("PreCompact", pre, matcher="manual"), **_one("PostCompact", post, matcher="manual")}
    replies = [[{"text": "one"}], [{"text": "two"}], [{"text": "Summary of the compacted conversation..."}]]
    harness = _harness(events, tools, replies, tmp_path)
    try:
        harness.run("first")
        harness.run("second")
        harness.run("/compact")
    finally:
        harness.close()  # hooks of observed events run in the background; shutdown waits for them
    assert [e.phase for e in harness.events_of(CompactionEvent)] == ["start", "done"]
    [before] = _inputs(pre_seen)
    assert ref.fields(ref.PRE_COMPACT_INPUT) <= set(before)
    assert (before["trigger"], before["custom_instructions"]) == ("manual", "")
    [after] = _inputs(post_seen)
    assert ref.fields(ref.POST_COMPACT_INPUT) <= set(after)
    assert after["trigger"] == "manual"
    assert "Summary of the compacted conversation..." in after["compact_summary"]


def test_stop_failure_runs_when_a_turn_ends_in_a_provider_error(hook_script, tools, tmp_path):
    recorder, seen = _recorder(hook_script, tmp_path, "failure", then="sys.exit(2)\n")
    stop, stop_seen = _recorder(hook_script, tmp_path, "stop")
    events = {**_one("StopFailure", recorder, matcher="authentication_failed"), **_one("Stop", stop)}
    harness = _harness(events, tools, [[{"error": "401 invalid x-api-key", "kind": "auth"}]], tmp_path)
    try:
        outcome = harness.run("go")
    finally:
        harness.close()  # StopFailure runs in the background; shutdown waits for it
    assert outcome.stop == "error"
    [event] = _inputs(seen)
    assert ref.fields(ref.STOP_FAILURE_INPUT) <= set(event)
    assert event["error"] == "authentication_failed"
    assert "401 invalid x-api-key" in event["error_details"]
    assert not stop_seen.exists()  # Stop is for answers, StopFailure instead of it
    warnings = [e.message for e in harness.events_of(NoticeEvent) if "StopFailure" in e.message]
    assert warnings == []  # its exit code is ignored


def test_session_end_runs_when_the_agent_closes(hook_script, tools, tmp_path):
    recorder, seen = _recorder(hook_script, tmp_path, "end")
    harness = _harness(_one("SessionEnd", recorder), tools, [[{"text": "hi"}]], tmp_path)
    harness.run("go")
    harness.close()
    [event] = _inputs(seen)
    assert ref.fields(ref.SESSION_END_INPUT) <= set(event)
    assert event["reason"] == "other" and event["session_id"] == harness.session.id


def test_a_session_end_hook_without_a_timeout_is_ended_after_one_and_a_half_seconds(hook_script, tools, tmp_path):
    slow = hook_script("slow", "import time\ntime.sleep(60)\n")
    harness = _harness(_one("SessionEnd", slow), tools, [[{"text": "hi"}]], tmp_path)
    harness.run("go")
    started = time.monotonic()
    harness.close()
    assert time.monotonic() - started < 30  # bounded; 60 s (the default timeout) would be a hang
    assert any(
        "SessionEnd" in e.message and "timed out after 1.5 s" in e.message for e in harness.events_of(NoticeEvent)
    )


def test_instructions_loaded_names_each_instruction_file(hook_script, tools, tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "CLAUDE.md").write_text("be brief\n")
    recorder, seen = _recorder(hook_script, tmp_path, "loaded")
    harness = _harness(
        _one("InstructionsLoaded", recorder, matcher="session_start"), tools, [[{"text": "hi"}]], tmp_path
    )
    try:
        harness.run("go")
    finally:
        harness.close()  # InstructionsLoaded runs in the background; shutdown waits for it
    [event] = _inputs(seen)
    assert ref.fields(ref.INSTRUCTIONS_LOADED_INPUT) <= set(event)
    assert event["file_path"] == str((tmp_path / "CLAUDE.md").resolve())
    assert (event["memory_type"], event["load_reason"]) == ("Project", "session_start")


# --- http hooks ---------------------------------------------------------------------------


class _Endpoint(BaseHTTPRequestHandler):
    answers: list[tuple[int, str]]
    seen: list[tuple[str, dict[str, str], dict[str, Any]]]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((self.path, dict(self.headers.items()), body))
        status, text = self.answers.pop(0) if self.answers else (200, "")
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[tuple[str, type[_Endpoint]]]:
    handler = type("Handler", (_Endpoint,), {"answers": [], "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(DEADLINE)


def _http_events(url: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(ref.HTTP_HOOK_CONFIG)["hooks"]
    config["PreToolUse"][0]["hooks"][0]["url"] = url + "/hooks/pre-tool-use"
    return config


def test_an_http_hook_gets_the_event_as_its_body_and_its_deny_refuses_the_call(endpoint, tools, tmp_path, monkeypatch):
    url, handler = endpoint
    monkeypatch.setenv("MY_TOKEN", "t0ken")
    monkeypatch.setenv("OTHER", "never-sent")
    handler.answers.append((200, ref.PRE_TOOL_USE_DENY_OUTPUT))
    events = _http_events(url)
    events["PreToolUse"][0]["hooks"][0]["headers"]["X-Other"] = "${OTHER}x"
    harness = _harness(events, tools, [[{"tool": "bash", "args": {"command": "psql"}}], [{"text": "d"}]], tmp_path)
    try:
        harness.run("go")
        [result] = harness.events_of(ToolResultEvent)
        assert result.is_error and "Database writes are not allowed" in result.content
        [(path, headers, body)] = handler.seen
        assert path == "/hooks/pre-tool-use"
        assert headers["Authorization"] == "Bearer t0ken"
        assert headers["X-Other"] == "x"  # not in allowedEnvVars: replaced by nothing
        assert headers["Content-Type"] == "application/json"
        assert body["hook_event_name"] == "PreToolUse" and body["tool_input"] == {"command": "psql"}
    finally:
        harness.close()


def test_an_http_hook_that_fails_or_is_unreachable_is_a_non_blocking_error(endpoint, tools, tmp_path):
    url, handler = endpoint
    handler.answers.append((500, "boom"))
    events = _http_events(url)
    events["PreToolUse"][0]["hooks"].append({"type": "http", "url": "http://127.0.0.1:9/none", "timeout": 5})
    harness = _harness(events, tools, [[{"tool": "bash", "args": {"command": "ls"}}], [{"text": "d"}]], tmp_path)
    try:
        harness.run("go")
        [result] = harness.events_of(ToolResultEvent)
        assert not result.is_error and result.content == "ran: ls"
        warnings = [e.message for e in harness.events_of(NoticeEvent) if e.level == "warning"]
        assert any("answered HTTP 500" in w for w in warnings)
        assert any("127.0.0.1:9/none" in w and "could not be reached" in w for w in warnings)
    finally:
        harness.close()


def test_an_http_hooks_plain_text_answer_is_context(endpoint, tools, tmp_path):
    url, handler = endpoint
    handler.answers.append((200, "Current branch: main"))
    events = {"UserPromptSubmit": [{"hooks": [{"type": "http", "url": url + "/prompt"}]}]}
    harness = _harness(events, tools, [[{"text": "hi"}]], tmp_path)
    try:
        harness.run("hello")
        sent = [m.content for m in harness.requests[0].messages if isinstance(m, UserMessage)]
        assert sent == ["hello", "Current branch: main"]
    finally:
        harness.close()


def test_an_async_hook_runs_in_the_background_and_its_message_reaches_the_next_prompt(hook_script, tools, tmp_path):
    # the reference's "Run hooks in the background" example, with a script that answers as its
    # run-tests-async.sh does ({"systemMessage": "Tests passed after editing …"})
    started, release = tmp_path / "started", tmp_path / "release"
    body = (
        "event = json.load(sys.stdin)\n"
        f"open({str(started)!r}, 'w').write('x')\n"
        "import time\n"
        f"while not os.path.exists({str(release)!r}):\n    time.sleep(0.02)\n"
        "print(json.dumps({'systemMessage': 'Tests passed after editing ' + event['tool_input']['command']}))\n"
    )
    events = {
        "PostToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": hook_script("tests", body), "async": True}]}
        ]
    }
    plugin = HooksPlugin()
    replies = [[{"tool": "bash", "args": {"command": "ls"}}], [{"text": "done"}], [{"text": "next"}]]
    harness = AgentHarness(
        replies, plugins={"hooks": plugin, "fake": tools}, config={"plugins.hooks.events": events}, workspace=tmp_path
    )
    try:
        harness.run("go")  # the turn ended while the hook still waits for `release`
        [result] = harness.events_of(ToolResultEvent)
        assert result.content == "ran: ls"  # nothing waited for it
        release.write_text("x")
        end = time.monotonic() + DEADLINE
        while plugin.hooks._background and time.monotonic() < end:  # the loop runs it to its end
            harness.run_async(asyncio.sleep(0.05))
        assert started.exists() and not plugin.hooks._background
        harness.run("and now?")
        said = [m.content for m in harness.requests[-1].messages if isinstance(m, UserMessage)]
        assert said[-2:] == ["and now?", "[async hook] Tests passed after editing ls"]
    finally:
        harness.close()


def test_session_start_gets_every_field_of_the_reference_the_model_included(hook_script, tools, tmp_path):
    recorder, seen = _recorder(hook_script, tmp_path, "start")
    harness = _harness(_one("SessionStart", recorder, matcher="startup"), tools, [[{"text": "hi"}]], tmp_path)
    try:
        harness.run("go")
    finally:
        harness.close()
    [event] = _inputs(seen)
    assert ref.fields(ref.SESSION_START_INPUT) <= set(event)
    assert (event["source"], event["model"]) == ("startup", "scripted")
