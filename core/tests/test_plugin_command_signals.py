"""A signal ends a plugin command that runs its own event loop: exit 128 + n with one line, and
the command's tasks are cancelled and settle (the signal is not lost inside a callback)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

WAIT = 60.0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_ends_a_plugin_commands_own_event_loop(fake_site, tmp_path: Path, signum: int) -> None:
    env = fake_site(["cli-extra"])
    marks = tmp_path / "marks"
    marks.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "crab", "spin-loop", str(marks)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + WAIT
        while not (marks / "running").exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the command's loop never started"
            time.sleep(0.05)
        time.sleep(0.2)  # the spinning task is well under way
        process.send_signal(signum)
        out, err = process.communicate(timeout=WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 128 + signum, err
    assert (marks / "settled").exists()  # main's finally ran: the loop cancelled it
    assert err.strip().splitlines() == [
        f"crab: stopped by {signal.Signals(signum).name}" if signum != signal.SIGINT else "crab: interrupted"
    ]
    assert "Traceback" not in err and "ended by itself" not in out
