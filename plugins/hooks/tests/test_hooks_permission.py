"""``PermissionRequest`` and ``Notification`` (``permission_prompt``) on crab's permission question
(core's ``crab_permission_request``), with the reference's examples: a user's hook answers for them,
a project's ``.claude`` hook may deny but never allow, and without an answer the user is asked and
a Notification hook hears of it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import crab
import hooks_reference_examples as ref
import pytest
from crab import PermissionRequest
from crab.events import NoticeEvent, ToolResultEvent
from crab.testing import AgentHarness
from crab_hooks import HooksPlugin
from crab_hooks.runtime import Hooks
from crab_hooks.sources import Group, HookCommand

DEADLINE = 30.0


class Shell:
    """``bash`` as crab-tools-basic has it: exec-class, so the permission gate asks."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    @crab.hookimpl
    def crab_tools(self) -> list[crab.Tool]:
        @crab.tool(name="bash", permission="exec")
        def bash(command: str) -> str:
            """Run nothing."""
            self.ran.append(command)
            return f"ran: {command}"

        return [bash]


def _run(events: dict[str, Any], tmp_path: Path) -> tuple[AgentHarness, Shell, list[PermissionRequest]]:
    asked: list[PermissionRequest] = []

    async def user(request: PermissionRequest) -> str:
        asked.append(request)
        return "once"

    shell = Shell()
    replies = [[{"tool": "bash", "args": {"command": "rm -rf node_modules"}}], [{"text": "done"}]]
    harness = AgentHarness(
        replies,
        plugins={"hooks": HooksPlugin(), "shell": shell},
        config={"plugins.hooks.events": events},
        workspace=tmp_path,
        ask=user,
    )
    try:
        harness.run("clean up")
    finally:
        harness.close()
    return harness, shell, asked


def _group(event: str, body: str, hook_script: Any, name: str) -> dict[str, Any]:
    return {event: [{"matcher": "Bash", "hooks": [{"type": "command", "command": hook_script(name, body)}]}]}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_the_users_allow_answers_for_them(hook_script, tmp_path):
    seen = tmp_path / "seen.jsonl"
    body = (
        f"open({str(seen)!r}, 'a').write(json.dumps(json.load(sys.stdin)) + '\\n')\n"
        f"print({ref.PERMISSION_REQUEST_ALLOW_OUTPUT!r})\n"
    )
    _, shell, asked = _run(_group("PermissionRequest", body, hook_script, "allow"), tmp_path)
    assert shell.ran == ["rm -rf node_modules"]  # updatedInput is not applied (README says why)
    assert asked == []
    [event] = _lines(seen)
    # every field of the reference's input but the optional permission_suggestions (crab's
    # "always" is per permission class, not a rule a hook could echo back)
    assert ref.fields(ref.PERMISSION_REQUEST_INPUT) - {"permission_suggestions"} <= set(event)
    assert (event["tool_name"], event["tool_input"]) == ("Bash", {"command": "rm -rf node_modules"})


def test_exit_2_denies_without_asking(hook_script, tmp_path):
    body = "print('not on the shared box', file=sys.stderr)\nsys.exit(2)\n"
    harness, shell, asked = _run(_group("PermissionRequest", body, hook_script, "deny"), tmp_path)
    assert shell.ran == [] and asked == []
    [result] = harness.events_of(ToolResultEvent)
    assert result.is_error
    notices = [e.message for e in harness.events_of(NoticeEvent)]
    assert "PermissionRequest hook denied Bash: not on the shared box" in notices


def test_without_an_answer_the_user_is_asked_and_notification_runs(hook_script, tmp_path):
    seen = tmp_path / "note.jsonl"
    events = {
        **_group("PermissionRequest", "sys.stdin.read()\n", hook_script, "silent"),
        "Notification": [
            {
                "matcher": "permission_prompt",
                "hooks": [
                    {
                        "type": "command",
                        "command": hook_script(
                            "note", f"open({str(seen)!r}, 'a').write(json.dumps(json.load(sys.stdin)) + '\\n')\n"
                        ),
                    }
                ],
            }
        ],
    }
    _, shell, asked = _run(events, tmp_path)
    assert [r.tool for r in asked] == ["bash"] and shell.ran == ["rm -rf node_modules"]
    [note] = _lines(seen)  # the agent's close waited for it
    assert ref.fields(ref.NOTIFICATION_INPUT) <= set(note)
    assert note["notification_type"] == "permission_prompt"
    assert note["message"] == "crab needs your permission to use Bash"


@pytest.mark.parametrize("project", [True, False])
def test_a_projects_allow_is_not_taken_its_deny_is(hook_script, tmp_path, project):
    allow = HookCommand(
        hook_script("allow", f"print({ref.PERMISSION_REQUEST_ALLOW_OUTPUT!r})\n"),
        DEADLINE,
        "/repo/.claude/settings.json" if project else "~/.claude/settings.json",
        tmp_path,
        project=project,
    )
    hooks = Hooks()
    hooks.hooks.groups["PermissionRequest"] = [Group("Bash", (allow,))]
    request = PermissionRequest("bash", "exec", 'bash(command="ls")', call_id="c1")
    answer = asyncio.run(hooks.permission(request, "s1", tmp_path))
    assert answer == (None if project else "once")
    deny = HookCommand(
        hook_script("deny", "sys.exit(2)\n"), DEADLINE, "/repo/.claude/settings.json", tmp_path, project=True
    )
    hooks.hooks.groups["PermissionRequest"].append(Group("Bash", (deny,)))
    assert asyncio.run(hooks.permission(request, "s1", tmp_path)) == "deny"


def test_calls_kept_for_a_permission_question_are_bounded(tmp_path):
    from crab_hooks.runtime import MAX_CALLS_KEPT

    hooks = Hooks()
    hooks.hooks.groups["PermissionRequest"] = [Group("Bash", (HookCommand("true", DEADLINE, "x", tmp_path),))]

    @crab.tool(name="bash")
    def bash(command: str) -> str:
        """Run nothing."""
        return command

    ctx = crab.ToolContext(session_id="s1", workspace=tmp_path)
    for n in range(MAX_CALLS_KEPT + 50):  # refused by a later hook: after_tool never sees them
        asyncio.run(hooks.before_tool(crab.messages.ToolCall(f"c{n}", "bash", {"command": "ls"}), bash, ctx))
    assert len(hooks._calls) == MAX_CALLS_KEPT
    assert f"c{MAX_CALLS_KEPT + 49}" in hooks._calls and "c0" not in hooks._calls
