"""``crab chat`` in a real terminal (tmux) with the user's Claude Code ``PermissionRequest`` hook:
an allowed call runs without the permission question ever showing; a denied one is refused with
the hook's line, and the question never shows either. Where no hook answers, the question shows
and a ``Notification`` hook hears of it."""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import hooks_reference_examples as ref
from crab.testing import ScriptedSite, TmuxScreen

PROMPT = "answer (y, a or n, then Enter)>"
DEADLINE = 30.0


def command_for(path: Path) -> str:
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


SHELL = '''
import crab


@crab.tool(name="bash", permission="exec")
def bash(command: str) -> str:
    """Run nothing."""
    return f"ran: {command}"


@crab.hookimpl
def crab_tools(config):
    return [bash]
'''


def enter(screen: TmuxScreen, text: str) -> None:
    screen.type(text)
    screen.keys("Enter")


def test_a_users_permission_request_hook_answers_in_chat(
    own_home: Path, tmp_path: Path, crab_screen: Callable[..., TmuxScreen]
):
    note = tmp_path / "notified.jsonl"
    decide = tmp_path / "decide.py"
    decide.write_text(
        "import json, sys\n"
        "command = json.load(sys.stdin)['tool_input']['command']\n"
        "if command.startswith('rm'):\n"
        "    print('no rm in this repository', file=sys.stderr); sys.exit(2)\n"
        "if command.startswith('ls'):\n"
        f"    print({ref.PERMISSION_REQUEST_ALLOW_OUTPUT!r})\n",
        encoding="utf-8",
    )
    notify = tmp_path / "notify.py"
    notify.write_text(
        f"import json, sys\nopen({str(note)!r}, 'a').write(json.dumps(json.load(sys.stdin)) + '\\n')\n",
        encoding="utf-8",
    )
    hooks = {
        "PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command_for(decide)}]}],
        "Notification": [
            {"matcher": "permission_prompt", "hooks": [{"type": "command", "command": command_for(notify)}]}
        ],
    }
    (own_home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}), encoding="utf-8")
    site = ScriptedSite(tmp_path)
    site.add_plugin("hkshell", "hooks_test_shell", SHELL)
    site.script(
        [
            [{"tool": "bash", "args": {"command": "ls"}}],
            [{"text": "listed it"}],
            [{"tool": "bash", "args": {"command": "rm -rf build"}}],
            [{"text": "could not remove"}],
            [{"tool": "bash", "args": {"command": "make"}}],
            [{"text": "made it"}],
        ]
    )
    env = site.env("fake,hkshell,hooks", home=own_home / ".crab", extra={"HOME": str(own_home)})
    work = tmp_path / "work"
    work.mkdir()
    command = [sys.executable, "-m", "crab", "chat", "--provider", "fake", "-m", "script"]
    screen = crab_screen(command, cwd=work, env={**env, "TERM": "xterm-256color"}, width=100, ready="crab> ")
    enter(screen, "list")
    shown = screen.wait_for("listed it")
    assert PROMPT not in shown  # the hook allowed it: no question
    enter(screen, "clean")
    shown = screen.wait_for("could not remove")
    assert "PermissionRequest hook denied Bash: no rm in this repository" in shown
    assert PROMPT not in shown
    assert not note.exists()  # nobody was asked so far
    enter(screen, "build")
    screen.wait_for(PROMPT)  # the hook said nothing: you are asked
    enter(screen, "y")
    screen.wait_for("made it")
    end = time.monotonic() + DEADLINE  # the Notification hook runs in the background
    while not note.exists() and time.monotonic() < end:
        time.sleep(0.05)
    [event] = [json.loads(line) for line in note.read_text().splitlines()]
    assert (event["notification_type"], event["message"]) == (
        "permission_prompt",
        "crab needs your permission to use Bash",
    )
