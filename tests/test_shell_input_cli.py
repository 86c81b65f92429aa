"""``!cmd`` through the real ``crab`` command: hostile piped input never runs as shell (issue 9, item 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = '[[{"text": "the model answered"}]]'


def _crab(tmp_path: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    script = tmp_path / "script.json"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(tmp_path / "home"), CRAB_PLUGINS="provider-mock")
    return subprocess.run(
        [sys.executable, "-m", "crab", *args[:1], "-m", f"mock/{script}", *args[1:]],
        cwd=work,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_piped_attack_from_the_issue_runs_nothing(tmp_path):
    result = _crab(tmp_path, "run", "-", stdin="!echo hi\nPlease summarize.\necho ran > injected.txt\n")
    assert result.returncode == 1
    assert not (tmp_path / "work" / "injected.txt").exists()
    assert "hi" not in result.stdout and "Please: not found" not in result.stderr
    assert "a !command is one line" in result.stderr
    assert "the model answered" not in result.stdout  # the rest is not sent to the model either


@pytest.mark.parametrize("flags", [(), ("--yolo",)])
def test_several_lines_are_refused_even_with_yolo(tmp_path, flags):
    result = _crab(tmp_path, "run", *flags, "-", stdin="!echo one > one.txt\necho two > two.txt\n")
    assert result.returncode == 1, result.stderr
    assert not list((tmp_path / "work").iterdir())


def test_one_piped_line_is_refused_where_crab_cannot_ask(tmp_path):
    result = _crab(tmp_path, "run", "-", stdin="!echo hi > made.txt\n")
    assert result.returncode == 1
    assert "needs exec permission and this run cannot ask" in result.stderr
    assert not (tmp_path / "work" / "made.txt").exists()


def test_read_only_refuses(tmp_path):
    result = _crab(tmp_path, "run", "--read-only", "!echo hi > made.txt", stdin="")
    assert result.returncode == 1
    assert "read-only" in result.stderr
    assert not (tmp_path / "work" / "made.txt").exists()


def test_yolo_runs_one_line(tmp_path):
    result = _crab(tmp_path, "run", "--yolo", "-", stdin="!echo hi > made.txt && echo done\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done"
    assert (tmp_path / "work" / "made.txt").read_text() == "hi\n"


def test_chat_fed_from_a_pipe_is_not_a_person_at_the_keyboard(tmp_path):
    result = _crab(tmp_path, "chat", stdin="!echo hi > made.txt\n")
    assert "needs exec permission" in result.stderr
    assert not (tmp_path / "work" / "made.txt").exists()


def _chat_on_a_terminal(tmp_path: Path, *flags: str, line: str) -> str:
    """Run ``crab chat`` on a pseudo-terminal, type ``line``, then Ctrl-D; return what it showed."""
    import pty
    import select
    import time

    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(tmp_path / "home"), CRAB_PLUGINS="provider-mock", TERM="dumb")
    script = tmp_path / "script.json"
    script.write_text(SCRIPT)
    main, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "crab", "chat", "-m", f"mock/{script}", *flags],
        cwd=work,
        env=env,
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        close_fds=True,
    )
    os.close(terminal)
    shown = b""

    def read_until_prompts(count: int, seconds: float = 30) -> None:
        nonlocal shown
        deadline = time.monotonic() + seconds
        while shown.count(b"crab> ") < count and time.monotonic() < deadline:
            if select.select([main], [], [], 0.1)[0]:
                try:
                    shown += os.read(main, 4096)
                except OSError:
                    return

    try:
        read_until_prompts(1)
        os.write(main, line.encode() + b"\n")
        read_until_prompts(2)
        os.write(main, b"\x04")
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(main)
    return shown.decode("utf-8", "replace")


def test_chat_at_a_terminal_runs_the_typed_line(tmp_path):
    shown = _chat_on_a_terminal(tmp_path, line="!echo typed > typed.txt && echo it-ran")
    assert (tmp_path / "work" / "typed.txt").read_text() == "typed\n", shown
    assert "it-ran" in shown and "allow exec" not in shown


def test_chat_at_a_terminal_still_refuses_in_read_only_mode(tmp_path):
    shown = _chat_on_a_terminal(tmp_path, "--read-only", line="!echo typed > typed.txt")
    assert not (tmp_path / "work" / "typed.txt").exists()
    assert "read-only" in shown


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS bounds memory as Linux counts it")
def test_a_flooding_command_keeps_crabs_memory_bounded(tmp_path):
    # 200 MB of output under a 400 MB address-space limit: crab keeps only the tail it shows.
    import resource

    limit = 400 * 1024 * 1024

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    work = tmp_path / "work"
    work.mkdir()
    script = tmp_path / "script.json"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(tmp_path / "home"), CRAB_PLUGINS="provider-mock", MALLOC_ARENA_MAX="2")
    flood = "!head -c 200000000 /dev/zero | tr '\\0' x; echo; echo last line"
    result = subprocess.run(
        [sys.executable, "-m", "crab", "run", "--yolo", "-m", f"mock/{script}", flood],
        cwd=work, env=env, capture_output=True, text=True, timeout=60, preexec_fn=bounded,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-500:]
    assert "of 2 lines (10 of 200000011 bytes)" in result.stdout
    assert result.stdout.rstrip().endswith("last line")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_process_a_bang_command_left_behind_ends_with_crab(tmp_path):
    import time

    escaper = (
        "!setsid sh -c 'echo $$ > escaped.tmp; mv escaped.tmp escaped.pid; exec sleep 300' > /dev/null 2>&1 & "
        "while [ ! -s escaped.pid ]; do sleep 0.05; done"
    )
    result = _crab(tmp_path, "run", "--yolo", escaper, stdin="")
    assert result.returncode == 0, result.stderr
    pid_file = tmp_path / "work" / "escaped.pid"
    deadline = time.monotonic() + 10
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(pid_file.read_text())

    def running() -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    while running() and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = running()
    if alive:
        os.kill(pid, 9)
    assert not alive, "a setsid process started by !cmd outlived crab"
