"""Every tool call is bounded: a sync tool stuck in C ends at its timeout or at Ctrl-C, through
the real ``crab`` command (a fake plugin's tools; the scripted fake provider)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


def script(tmp_path: Path, tool: str) -> Path:
    path = tmp_path / "script.json"
    replies = [[{"tool": tool, "args": {}}], [{"text": "carried on"}]]
    path.write_text(json.dumps({"replies": replies}))
    return path


def start(env: dict[str, str], tmp_path: Path, tool: str, timeout: float) -> subprocess.Popen[str]:
    env = {**env, "CRAB_PLUGINS": "scripted,stuck", "CRAB_FAKE_STUCK_STARTED": str(tmp_path / "started")}
    args = ["run", "-m", f"scripted/{script(tmp_path, tool)}", "-o", "json"]
    args += ["--set", f"crab.tool_timeout={timeout}", "go"]
    return subprocess.Popen(
        [sys.executable, "-m", "crab", *args],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until_started(tmp_path: Path, crab: subprocess.Popen[str]) -> None:
    """Until the stuck tool has begun (it writes ``started``), or crab has exited."""
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists() and crab.poll() is None:
        assert time.monotonic() < deadline, "the stuck tool never started"
        time.sleep(0.01)


def test_a_tool_asleep_in_c_times_out_and_the_turn_goes_on(fake_site, tmp_path: Path) -> None:
    crab = start(fake_site(["scripted", "stuck"]), tmp_path, "nap", timeout=1)
    out, err = crab.communicate(timeout=60)  # five minutes if the thread were joined at exit
    assert crab.returncode == 0, err
    doc = json.loads(out)
    assert doc["text"] == "carried on"
    assert doc["tool_calls"][0]["is_error"]
    assert "timed out after 1 s" in doc["tool_calls"][0]["result"]


@pytest.mark.parametrize("tool", ["nap", "backtrack"])
def test_ctrl_c_ends_crab_within_two_seconds_whatever_the_tool_does(fake_site, tmp_path: Path, tool: str) -> None:
    crab = start(fake_site(["scripted", "stuck"]), tmp_path, tool, timeout=600)
    # Once the tool runs (crab's start-up takes longer under load), and for backtrack well
    # before the watchdog's own stall limit.
    wait_until_started(tmp_path, crab)
    assert crab.poll() is None
    sent = time.monotonic()
    crab.send_signal(signal.SIGINT)
    try:
        crab.wait(timeout=30)
    finally:
        crab.kill()
    took = time.monotonic() - sent
    err = crab.stderr.read() if crab.stderr else ""
    assert took < 2.5, (took, err)
    if tool == "nap":
        # The interpreter was free: a clean abort, the conventional code.
        assert crab.returncode == 130, err
    else:
        # re held the GIL: no Python code could run, the watchdog ended crab from its C thread.
        assert crab.returncode in (1, 130), err


def test_a_tool_holding_the_interpreter_is_ended_by_the_watchdog(fake_site, tmp_path: Path) -> None:
    crab = start(fake_site(["scripted", "stuck"]), tmp_path, "backtrack", timeout=600)
    try:
        crab.wait(timeout=30)  # the match alone would take far longer than that
    finally:
        crab.kill()
    err = crab.stderr.read() if crab.stderr else ""
    assert crab.returncode == 1
    assert "backtrack" in err  # faulthandler's traceback names the stuck tool


def test_chat_lives_on_between_turns_with_an_abandoned_tool_thread(fake_site, tmp_path: Path) -> None:
    env = {**fake_site(["scripted", "stuck"]), "CRAB_PLUGINS": "scripted,stuck"}
    args = ["chat", "-m", f"scripted/{script(tmp_path, 'nap')}"]
    crab = subprocess.Popen(
        [sys.executable, "-m", "crab", *args, "--set", "crab.tool_timeout=1"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert crab.stdin is not None
    crab.stdin.write(b"go\n")
    crab.stdin.flush()
    try:
        time.sleep(4)  # the turn (1 s) is over; the nap thread sleeps on; the watchdog must not fire
        assert crab.poll() is None, crab.stderr.read() if crab.stderr else ""
        crab.stdin.close()
        crab.wait(timeout=30)
    finally:
        crab.kill()
        crab.wait()
    assert crab.returncode == 0


def test_ctrl_c_at_the_permission_question_exits_at_once(fake_site, tmp_path: Path) -> None:
    import os
    import pty

    env = {**fake_site(["scripted", "files"]), "CRAB_PLUGINS": "scripted,files"}
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"replies": [[{"tool": "touch", "args": {"name": "x"}}], [{"text": "ok"}]]}))
    leader, follower = pty.openpty()
    crab = subprocess.Popen(
        [sys.executable, "-m", "crab", "run", "-m", f"scripted/{path}", "go"],
        env=env,
        cwd=tmp_path,
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    try:
        seen = b""
        deadline = time.monotonic() + 30
        while b"allow write" not in seen and time.monotonic() < deadline:
            seen += os.read(leader, 1024)
        assert b"allow write" in seen
        sent = time.monotonic()
        crab.send_signal(signal.SIGINT)
        crab.wait(timeout=30)
        took = time.monotonic() - sent
    finally:
        crab.kill()
        crab.wait()
        os.close(leader)
    assert crab.returncode == 130
    assert took < 2.0
