"""crab-hooks in a real agent (scripted provider, real hook processes): each event, each exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crab.events import NoticeEvent, ToolResultEvent
from crab.messages import UserMessage
from crab.testing import AgentHarness
from crab_hooks import HooksPlugin


def pre_tool_use(command: str, matcher: str = "Bash", **extra: object) -> dict[str, object]:
    """``[plugins.hooks] events`` with one PreToolUse group."""
    return {"PreToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": command, **extra}]}]}


def _harness(events: dict[str, object], fake_bash: Any, replies: list[object], workspace: Path) -> AgentHarness:
    return AgentHarness(
        replies,
        plugins={"hooks": HooksPlugin(), "fake": fake_bash},
        config={"plugins.hooks.events": events},
        workspace=workspace,
    )


def _bash(command: str, **more: object) -> list[object]:
    return [{"tool": "bash", "args": {"command": command, **more}}]


def _warnings(harness: AgentHarness) -> list[str]:
    return [e.message for e in harness.events_of(NoticeEvent) if e.level == "warning"]


def test_the_validator_example_blocks_a_bash_call_and_the_model_reads_why(validator, fake_bash, tmp_path):
    replies = [_bash("grep -r TODO ."), [{"text": "ok, rg then"}]]
    harness = _harness(pre_tool_use(validator), fake_bash, replies, tmp_path)
    try:
        outcome = harness.run("find the TODOs")
        assert outcome.text == "ok, rg then"
        assert fake_bash.calls == []  # never ran
        [result] = harness.events_of(ToolResultEvent)
        assert result.is_error
        assert "• Use 'rg' (ripgrep) instead of 'grep'" in result.content
    finally:
        harness.close()


def test_an_allowed_command_runs_and_the_hook_saw_claude_codes_shape(hook_script, fake_bash, tmp_path):
    seen = tmp_path / "seen.json"
    command = hook_script("record", f"open({str(seen)!r}, 'w').write(sys.stdin.read())\n")
    harness = _harness(
        pre_tool_use(command, matcher="Bash|Edit"), fake_bash, [_bash("ls", timeout=5), [{"text": "done"}]], tmp_path
    )
    try:
        harness.run("list")
        assert fake_bash.calls == [{"command": "ls", "timeout": 5.0}]
        event = json.loads(seen.read_text())
        assert event["hook_event_name"] == "PreToolUse"
        assert event["tool_name"] == "Bash"
        assert event["tool_input"] == {"command": "ls", "timeout": 5000}
        assert event["session_id"] == harness.session.id
        assert event["cwd"] == str(tmp_path)
        assert event["transcript_path"] is None
        assert event["permission_mode"] == "default"
        assert event["tool_use_id"]
    finally:
        harness.close()


def test_updated_input_replaces_the_arguments(hook_script, fake_bash, tmp_path):
    body = (
        "event = json.load(sys.stdin)\n"
        "command = event['tool_input']['command'].replace('grep', 'rg')\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', 'permissionDecision': 'allow',"
        " 'updatedInput': {'command': command, 'timeout': 2000}}}))\n"
    )
    harness = _harness(
        pre_tool_use(hook_script("rewrite", body)), fake_bash, [_bash("grep x"), [{"text": "d"}]], tmp_path
    )
    try:
        harness.run("go")
        assert fake_bash.calls == [{"command": "rg x", "timeout": 2.0}]
    finally:
        harness.close()


def test_a_json_deny_refuses_with_its_reason(hook_script, fake_bash, tmp_path):
    body = (
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', 'permissionDecision': 'deny',"
        " 'permissionDecisionReason': 'not on Fridays'}}))\n"
    )
    harness = _harness(pre_tool_use(hook_script("deny", body)), fake_bash, [_bash("ls"), [{"text": "d"}]], tmp_path)
    try:
        harness.run("go")
        assert fake_bash.calls == []
        [result] = harness.events_of(ToolResultEvent)
        assert result.is_error and "not on Fridays" in result.content
    finally:
        harness.close()


def test_a_matcher_for_another_tool_does_not_run(hook_script, fake_bash, tmp_path):
    harness = _harness(
        pre_tool_use(hook_script("block", "sys.exit(2)\n"), matcher="Write|Edit"),
        fake_bash,
        [_bash("ls"), [{"text": "d"}]],
        tmp_path,
    )
    try:
        harness.run("go")
        assert fake_bash.calls == [{"command": "ls", "timeout": None}]
    finally:
        harness.close()


def test_other_exit_codes_are_non_blocking_errors_shown_in_one_line(hook_script, fake_bash, tmp_path):
    command = hook_script(
        "broken", "print('Traceback (most recent call last):\\n  boom', file=sys.stderr)\nsys.exit(1)\n"
    )
    harness = _harness(pre_tool_use(command), fake_bash, [_bash("ls"), [{"text": "d"}]], tmp_path)
    try:
        harness.run("go")
        assert fake_bash.calls == [{"command": "ls", "timeout": None}]  # ran anyway
        [line] = [w for w in _warnings(harness) if "PreToolUse" in w]
        assert "failed with exit code 1: Traceback (most recent call last):" in line
        assert "\n" not in line
    finally:
        harness.close()


def test_a_hook_past_its_timeout_is_ended_and_the_call_goes_on(hook_script, fake_bash, tmp_path):
    command = hook_script("slow", "import time\ntime.sleep(60)\n")
    harness = _harness(pre_tool_use(command, timeout=0.5), fake_bash, [_bash("ls"), [{"text": "d"}]], tmp_path)
    try:
        harness.run("go")
        assert fake_bash.calls == [{"command": "ls", "timeout": None}]
        assert any("timed out after 0.5 s and was ended" in w for w in _warnings(harness))
    finally:
        harness.close()


def test_post_tool_use_feedback_and_context_reach_the_model(hook_script, fake_bash, tmp_path):
    seen = tmp_path / "post.json"
    block = hook_script(
        "lint",
        f"open({str(seen)!r}, 'w').write(sys.stdin.read())\nprint('lint: 2 warnings', file=sys.stderr)\nsys.exit(2)\n",
    )
    context = hook_script(
        "context",
        "out = {'hookEventName': 'PostToolUse', 'additionalContext': 'the build is green'}\n"
        "print(json.dumps({'hookSpecificOutput': out}))\n",
    )
    events = {
        "PostToolUse": [
            {"matcher": "*", "hooks": [{"type": "command", "command": block}, {"type": "command", "command": context}]}
        ]
    }
    harness = _harness(events, fake_bash, [_bash("make"), [{"text": "d"}]], tmp_path)
    try:
        harness.run("go")
        [result] = harness.events_of(ToolResultEvent)
        assert result.content.startswith("ran: make")
        assert "[PostToolUse hook] lint: 2 warnings" in result.content
        assert "[PostToolUse hook] the build is green" in result.content
        event = json.loads(seen.read_text())
        assert event["tool_response"]["stdout"] == "ran: make" and event["tool_response"]["success"] is True
    finally:
        harness.close()


def test_user_prompt_submit_adds_context_or_refuses(hook_script, fake_bash, tmp_path):
    body = (
        "event = json.load(sys.stdin)\n"
        "if 'password' in event['prompt']:\n"
        "    print('prompts may not hold passwords', file=sys.stderr); sys.exit(2)\n"
        "print('Current branch: main')\n"
    )
    events = {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": hook_script("prompt", body)}]}]}
    harness = _harness(events, fake_bash, [[{"text": "hi"}]], tmp_path)
    try:
        refused = harness.run("my password is hunter2")
        assert refused.stop == "error" and refused.error == "prompt refused: prompts may not hold passwords"
        assert harness.requests == []
        assert harness.run("hello").text == "hi"
        sent = [m.content for m in harness.requests[0].messages if isinstance(m, UserMessage)]
        assert sent == ["hello", "Current branch: main"]
    finally:
        harness.close()


def test_stop_keeps_the_turn_going_until_the_hook_lets_it_end(hook_script, fake_bash, tmp_path):
    body = (
        "event = json.load(sys.stdin)\n"
        "if not event['stop_hook_active']:\n"
        "    print(json.dumps({'decision': 'block', 'reason': 'run the tests first'}))\n"
    )
    events = {"Stop": [{"hooks": [{"type": "command", "command": hook_script("stop", body)}]}]}
    harness = _harness(events, fake_bash, [[{"text": "done"}], [{"text": "tests pass"}]], tmp_path)
    try:
        outcome = harness.run("fix it")
        assert outcome.text == "tests pass"
        assert [m.content for m in harness.session.messages if isinstance(m, UserMessage)] == [
            "fix it",
            "run the tests first",
        ]
    finally:
        harness.close()


def test_session_start_context_comes_with_the_first_prompt_only(hook_script, fake_bash, tmp_path):
    seen = tmp_path / "start.jsonl"
    body = f"open({str(seen)!r}, 'a').write(sys.stdin.read() + '\\n')\nprint('Open issues: #12, #15')\n"
    events = {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": hook_script("start", body)}]}]
    }
    harness = _harness(events, fake_bash, [[{"text": "a"}], [{"text": "b"}]], tmp_path)
    try:
        harness.run("one")
        harness.run("two")
        texts = [m.content for m in harness.session.messages if isinstance(m, UserMessage)]
        assert texts == ["one", "Open issues: #12, #15", "two"]
        [event] = [json.loads(line) for line in seen.read_text().splitlines()]
        assert event["hook_event_name"] == "SessionStart" and event["source"] == "startup"
    finally:
        harness.close()


def test_continue_false_ends_the_turn(hook_script, fake_bash, tmp_path):
    body = "print(json.dumps({'continue': False, 'stopReason': 'budget spent', 'systemMessage': 'stopping'}))\n"
    harness = _harness(
        pre_tool_use(hook_script("halt", body)), fake_bash, [_bash("ls") + _bash("pwd"), [{"text": "never"}]], tmp_path
    )
    try:
        outcome = harness.run("go")
        assert outcome.stop == "guard"
        assert fake_bash.calls == []
        assert len(harness.requests) == 1
        assert any(w == "PreToolUse hook: stopping" for w in _warnings(harness))
    finally:
        harness.close()


def test_a_resumed_session_starts_with_source_resume(hook_script, fake_bash, tmp_path):
    from crab.testing import ScriptedProvider

    seen = tmp_path / "sources"
    body = f"open({str(seen)!r}, 'a').write(json.load(sys.stdin)['source'] + '\\n')\n"
    events = {"SessionStart": [{"hooks": [{"type": "command", "command": hook_script("start", body)}]}]}
    first = _harness(events, fake_bash, [[{"text": "a"}]], tmp_path)
    try:
        first.run("one")
        session_id, store = first.session.id, first.store
    finally:
        first.close()
    second = AgentHarness(
        provider=ScriptedProvider([[{"text": "b"}]]),
        store=store,
        plugins={"hooks": HooksPlugin(), "fake": fake_bash},
        config={"plugins.hooks.events": events},
        workspace=tmp_path,
    )
    try:
        second.session = second.run_async(second.agent.resume(session_id))
        second.run("two")
    finally:
        second.close()
    assert seen.read_text().split() == ["startup", "resume"]
