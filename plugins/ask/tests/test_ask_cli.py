"""crab-ask through the real ``crab`` command: ``crab run`` without a terminal is told at once that
nobody can answer; ``crab chat`` (core's plain prompt, in tmux) asks on the terminal and takes
only what is typed after the question was shown."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from crab_ask.asking import NOBODY

QUESTION = [{"tool": "ask_user", "args": {"question": "Which database?", "choices": ["SQLite", "PostgreSQL"]}}]


def test_crab_run_without_a_terminal_answers_nobody_can_answer_at_once(fake_env, tmp_path):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "crab", "run", "--provider", "fake", "-m", "script", "-o", "json", "pick one"],
        env=fake_env([QUESTION, [{"text": "went on with SQLite"}]]),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    [call] = document["tool_calls"]
    assert (call["name"], call["result"], call["is_error"]) == ("ask_user", NOBODY, True)
    assert document["text"] == "went on with SQLite"
    assert time.monotonic() - started < 60  # the process start, never the question's 900 s


def test_crab_chat_asks_on_the_terminal_and_ignores_type_ahead(chat_screen, sent_requests):
    closed = [{"tool": "ask_user", "args": {**QUESTION[0]["args"], "allow_other": False}}]
    screen = chat_screen([closed, [{"text": "PostgreSQL it is"}]])
    screen.type("set it up")
    screen.keys("Enter")
    screen.wait_for("? Which database?")
    screen.type("1")  # typed within the guard, before anyone can have read it: thrown away
    screen.keys("Enter")
    screen.wait_for("answer>")
    time.sleep(1.0)  # past the guard
    screen.type("5")
    screen.keys("Enter")
    screen.wait_for("not an answer: '5'")
    screen.type("2")
    screen.keys("Enter")
    screen.wait_for("PostgreSQL it is")
    tool_results = [m for m in sent_requests()[-1] if m.get("role") == "tool"]
    assert [m["content"] for m in tool_results] == ["The user chose: PostgreSQL"]
