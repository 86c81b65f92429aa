"""crab-plan through the real ``crab`` command: ``crab run --plan`` and ``permissions = "plan"``
without a terminal refuse the write with why and end with the plan; ``crab chat`` (core's plain
prompt, in tmux) enters plan mode with ``/plan``, asks for approval on the terminal and, approved,
writes; the request prefix is the same before and after."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

PLAN_CALL = [{"tool": "present_plan", "args": {"plan": "Write the note.", "steps": ["write note.txt"]}}]
WRITE = [{"tool": "write_note", "args": {"name": "note.txt", "text": "hi"}}]


def crab_run(env, cwd, *args):
    return subprocess.run(
        [sys.executable, "-m", "crab", "run", "--provider", "fake", "-m", "script", "-o", "json", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_crab_run_plan_refuses_the_write_and_ends_with_the_plan(fake_env, tmp_path: Path):
    done = crab_run(fake_env([WRITE, PLAN_CALL, [{"text": "Plan: write the note."}]]), tmp_path, "--plan", "note it")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    write, present = document["tool_calls"]
    assert write["is_error"] and "this session is in plan mode" in write["result"]
    assert "Nobody can approve a plan in this run" in present["result"]
    assert document["text"] == "Plan: write the note."
    assert not (tmp_path / "note.txt").exists()


def test_permissions_plan_in_config_is_plan_mode(fake_env, tmp_path: Path):
    done = crab_run(fake_env([WRITE, [{"text": "ok"}]]), tmp_path, "--set", "crab.permissions=plan", "note it")
    assert done.returncode == 0, done.stderr
    [write] = json.loads(done.stdout)["tool_calls"]
    assert "this session is in plan mode" in write["result"]
    assert not (tmp_path / "note.txt").exists()


def test_crab_chat_slash_plan_asks_approval_on_the_terminal_then_writes(chat_screen, sent_requests, tmp_path):
    replies = [[{"text": "hello"}], WRITE, PLAN_CALL, WRITE, [{"text": "note written"}]]
    screen = chat_screen(replies, "--yolo")
    screen.type("hi")
    screen.keys("Enter")
    screen.wait_for("hello")
    screen.type("/plan")
    screen.keys("Enter")
    screen.wait_for("plan mode on")
    screen.type("write a note")
    screen.keys("Enter")
    screen.wait_for("? The model's plan:")
    screen.wait_for("answer>")
    time.sleep(1.0)  # past the question's guard against type-ahead
    screen.type("1")
    screen.keys("Enter")
    screen.wait_for("note written")
    assert (tmp_path / "work" / "note.txt").read_text() == "hi"
    requests = sent_requests()
    results = [m["content"] for m in requests[-1]["messages"] if m.get("role") == "tool"]
    assert "this session is in plan mode" in results[0] and results[1].startswith("[plan approved]")
    assert results[2] == "wrote note.txt"  # yolo again, as before plan mode: not asked
    assert len({r["system"] for r in requests}) == 1
