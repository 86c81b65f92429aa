"""After a signal the ``crab`` command ends within its clean-up budget: with one line and 128 + n
when the clean-up is merely slow (a tool that ignores its cancel for five seconds, in Python, the
GIL free), through the watchdog's GIL-free timer only when no Python thread can run; a deadline
withdrawn (``crab chat`` goes on) never fires. The real ``crab`` command with a fake plugin's
tools and the scripted fake provider, and the watchdog in processes of their own."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

DEADLINE = 60.0
"""Seconds a test waits for an event (the tool's start, crab's end): generous, for a loaded machine."""
DUMP = ("Traceback", "Thread 0x", "Timeout (", "Fatal Python error")


def start(env: dict[str, str], tmp_path: Path, tool: str) -> subprocess.Popen[str]:
    """``crab run`` whose model calls ``tool`` (of the fake plugin ``stuck``), then would carry on."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [[{"tool": tool, "args": {}}], [{"text": "carried on"}]]}))
    env = {**env, "CRAB_PLUGINS": "scripted,stuck", "CRAB_FAKE_STUCK_STARTED": str(tmp_path / "started")}
    return subprocess.Popen(
        [sys.executable, "-m", "crab", "run", "-m", f"scripted/{script}", "-o", "json", "go"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def interrupt(crab: subprocess.Popen[str], tmp_path: Path, signum: int) -> str:
    """Send ``signum`` once the tool runs; crab's stderr once it has ended."""
    deadline = time.monotonic() + DEADLINE
    while not (tmp_path / "started").exists():
        assert crab.poll() is None, crab.communicate()
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.01)
    crab.send_signal(signum)
    try:
        _, err = crab.communicate(timeout=DEADLINE)
    finally:
        crab.kill()
    return err


@pytest.mark.parametrize(
    ("signum", "line"), [(signal.SIGINT, "crab: interrupted"), (signal.SIGTERM, "crab: stopped by SIGTERM")]
)
def test_a_slow_clean_up_ends_at_the_deadline_with_one_line_and_the_signals_code(
    fake_site, tmp_path: Path, signum: int, line: str
) -> None:
    # The tool's clean-up takes five seconds, past the 1.9 s budget; the interpreter is free all along.
    crab = start(fake_site(["scripted", "stuck"]), tmp_path, "stubborn")
    err = interrupt(crab, tmp_path, signum)
    assert crab.returncode == 128 + signum, err
    for dump in DUMP:
        assert dump not in err, err
    said = [said for said in err.splitlines() if said.startswith("crab:")]
    assert said == [f"{line}; clean-up did not finish within 1.9 s (the stopped turn was still settling)"], err


def test_a_clean_up_that_holds_the_interpreter_is_ended_by_the_gil_free_timer(fake_site, tmp_path: Path) -> None:
    # The tool's clean-up matches a catastrophic pattern in the event loop's thread: no Python
    # thread runs until it ends (minutes), so only faulthandler's timer can end crab.
    crab = start(fake_site(["scripted", "stuck"]), tmp_path, "grudging")
    err = interrupt(crab, tmp_path, signal.SIGINT)
    assert crab.returncode == 1, err
    assert "Timeout (" in err and "_catastrophe" in err, err  # the last resort names where it was stuck


def watchdog_process(body: str) -> subprocess.CompletedProcess[str]:
    """``body`` run after ``enable()`` in a Python process of its own (it may end that process)."""
    code = "import time\nfrom crab._system import watchdog\nwatchdog.enable()\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=DEADLINE)


def test_the_deadline_ends_a_busy_process_with_its_code_and_line_before_the_gil_free_timer() -> None:
    ended = watchdog_process(
        """
        watchdog.exit_within(0.2, 130, lambda: "crab: interrupted; the last words")
        print("waiting", flush=True)
        time.sleep(60)  # Python code that never ends by itself, the GIL free
        """
    )
    assert ended.returncode == 130, ended.stderr
    assert ended.stdout == "waiting\n"
    assert ended.stderr == "crab: interrupted; the last words\n"


def test_a_withdrawn_deadline_never_fires_and_a_later_one_does() -> None:
    ended = watchdog_process(
        """
        watchdog.exit_within(1.0, 41, lambda: "the first")
        watchdog.clear_exit()  # crab chat after a stopped turn
        time.sleep(3)  # three times the withdrawn deadline (waiting for something not to happen)
        print("still here", flush=True)
        watchdog.exit_within(0.1, 42, lambda: "")  # "": nothing to say, as when the command said it
        time.sleep(60)
        """
    )
    assert (ended.returncode, ended.stdout, ended.stderr) == (42, "still here\n", "")


def test_the_deadline_thread_is_started_with_the_watchdog_not_by_the_signal() -> None:
    # A signal handler that starts a thread can deadlock on threading's own lock, held by the
    # code it interrupted: the thread that keeps the deadline is there from ``enable`` on.
    shown = watchdog_process(
        """
        import threading
        print(sorted(t.name for t in threading.enumerate() if t.name.startswith("crab-exit")))
        """
    )
    assert shown.stdout == "['crab-exit-deadline']\n", shown.stderr
