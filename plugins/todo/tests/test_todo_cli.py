"""crab-todo through the real ``crab`` command: the plain renderer prints the checklist as lines on
stderr (stdout keeps only the answer), ``-o jsonl`` carries it as a ``plan`` event, and ``crab
chat`` (core's plain prompt, in tmux) shows it and ``/todo``."""

from __future__ import annotations

import json
import subprocess
import sys

STEPS = [
    {"text": "read the parser", "status": "done"},
    {"text": "fix the bug", "status": "in_progress"},
    {"text": "add a test", "status": "pending"},
]
REPLIES = [[{"tool": "todo", "args": {"items": STEPS}}], [{"text": "on it"}]]


def crab_run(env, cwd, *args):
    return subprocess.run(
        [sys.executable, "-m", "crab", "run", "--provider", "fake", "-m", "script", *args, "fix the parser"],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_crab_run_prints_the_plan_as_lines(fake_env, tmp_path):
    done = crab_run(fake_env(REPLIES), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "on it\n"
    lines = done.stderr.splitlines()
    start = lines.index("plan (1/3 done):")
    assert lines[start + 1 : start + 4] == ["  [x] read the parser", "  [>] fix the bug", "  [ ] add a test"]


def test_crab_run_jsonl_carries_a_plan_event(fake_env, tmp_path):
    done = crab_run(fake_env(REPLIES), tmp_path, "-o", "jsonl")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [plan] = [e for e in events if e["type"] == "plan"]
    assert plan["items"] == STEPS and plan["session_id"]


def test_crab_chat_shows_the_plan_and_slash_todo(chat_screen):
    screen = chat_screen(REPLIES)
    screen.type("fix the parser")
    screen.keys("Enter")
    screen.wait_for("on it")
    shown = screen.text()
    assert "plan (1/3 done):" in shown and "  [>] fix the bug" in shown
    screen.type("/todo")
    screen.keys("Enter")
    shown = screen.wait_for("plan (1/3 done):\n[x] read the parser")
    assert "[>] fix the bug\n[ ] add a test" in shown
