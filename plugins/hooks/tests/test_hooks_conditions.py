"""A hook's ``if`` (Claude Code's permission-rule syntax): which calls it names, and the
reference's "How a hook resolves" example end to end (matcher ``Bash``, ``if: "Bash(rm *)"``)."""

from __future__ import annotations

import json
from pathlib import Path

import crab
import pytest
from crab.events import ToolResultEvent
from crab.testing import AgentHarness
from crab_hooks import HooksPlugin
from crab_hooks.conditions import matches

WORK = Path("/home/user/my-project")


@pytest.mark.parametrize(
    ("rule", "tool", "tool_input", "expected"),
    [
        ("Bash(rm *)", "Bash", {"command": "rm -rf /tmp/build"}, True),
        ("Bash(rm *)", "Bash", {"command": "npm test"}, False),
        ("Bash(git *)", "Bash", {"command": "git status"}, True),
        ("Bash(npm run test:*)", "Bash", {"command": "npm run test -- -x"}, True),
        ("Bash", "Bash", {"command": "anything"}, True),
        ("Bash(rm *)", "Edit", {"file_path": "/x/rm y"}, False),
        ("Edit(*.ts)", "Edit", {"file_path": str(WORK / "src" / "a.ts")}, True),
        ("Edit(*.ts)", "Edit", {"file_path": str(WORK / "src" / "a.py")}, False),
        ("Read(./src/**)", "Read", {"file_path": str(WORK / "src" / "deep" / "a.py")}, True),
        ("Read(./src/**)", "Read", {"file_path": str(WORK / "docs" / "a.md")}, False),
        ("Write(//etc/*)", "Write", {"file_path": "/etc/hosts"}, True),
        ("WebFetch(domain:example.com)", "WebFetch", {"url": "https://docs.example.com/x"}, True),
        ("WebFetch(domain:example.com)", "WebFetch", {"url": "https://example.org/"}, False),
        ("mcp__memory__create(x)", "mcp__memory__create", {}, False),  # no rule for its arguments
        ("not a rule (", "Bash", {"command": "ls"}, False),
    ],
)
def test_a_rule_names_the_calls_it_should(rule, tool, tool_input, expected):
    assert matches(rule, tool, tool_input, WORK) is expected


class Shell:
    @crab.hookimpl
    def crab_tools(self) -> list[crab.Tool]:
        @crab.tool(name="bash")
        def bash(command: str) -> str:
            """Run nothing."""
            return f"ran: {command}"

        return [bash]


def test_the_references_block_rm_example(hook_script, tmp_path):
    seen = tmp_path / "spawned"
    # the reference's block-rm.sh, in Python: deny when the command holds rm -rf
    body = (
        f"open({str(seen)!r}, 'a').write('x')\n"
        "command = json.load(sys.stdin)['tool_input']['command']\n"
        "if 'rm -rf' in command:\n"
        "    print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', 'permissionDecision': 'deny',"
        " 'permissionDecisionReason': 'Destructive command blocked by hook'}}))\n"
    )
    config = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "if": "Bash(rm *)", "command": ""}]}]}
    config["PreToolUse"][0]["hooks"][0]["command"] = hook_script("block-rm", body)
    replies = [
        [{"tool": "bash", "args": {"command": "npm test"}}],
        [{"tool": "bash", "args": {"command": "rm -rf /tmp/build"}}],
        [{"text": "done"}],
    ]
    harness = AgentHarness(
        replies,
        plugins={"hooks": HooksPlugin(), "shell": Shell()},
        config={"plugins.hooks.events": json.loads(json.dumps(config))},
        workspace=tmp_path,
    )
    try:
        harness.run("go")
        npm, rm = harness.events_of(ToolResultEvent)
        assert npm.content == "ran: npm test" and not npm.is_error
        assert rm.is_error and "Destructive command blocked by hook" in rm.content
        assert seen.read_text() == "x"  # spawned once: for rm, never for npm test
    finally:
        harness.close()


def test_a_hook_with_if_never_runs_on_an_event_without_a_tool(hook_script, tmp_path):
    seen = tmp_path / "spawned"
    command = hook_script("prompt", f"open({str(seen)!r}, 'a').write('x')\n")
    events = {"UserPromptSubmit": [{"hooks": [{"type": "command", "if": "Bash", "command": command}]}]}
    harness = AgentHarness(
        [[{"text": "hi"}]],
        plugins={"hooks": HooksPlugin()},
        config={"plugins.hooks.events": events},
        workspace=tmp_path,
    )
    try:
        harness.run("hello")
        assert not seen.exists()
    finally:
        harness.close()
