"""bash: timeouts and aborts kill the whole process group; output is bounded; nothing hangs."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crab import ToolContext, ToolResult
from crab.tools import run_tool
from crab_tools_basic.registry import build_tools


def gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie nobody reaped yet counts as exited)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(") ", 1)[1][0] in "ZX"
    except FileNotFoundError:
        return True


def wait_gone(pid: int, within: float = 30.0) -> bool:  # returns once gone; a loaded machine is slow
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.05)
    return False


def read_pid(path: Path, within: float = 10.0) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        text = path.read_text().strip() if path.exists() else ""
        if text.isdigit():
            return int(text)
        time.sleep(0.02)
    raise AssertionError(f"{path} never got a pid")


def test_output_and_exit_code(workspace: Path, call: Callable[..., ToolResult]) -> None:
    result = call("bash", command="pwd; echo err >&2")
    assert not result.is_error
    assert result.content == f"{workspace}\nerr\n[exit code 0]"


def test_non_zero_exit_is_an_error_that_keeps_the_output(call: Callable[..., ToolResult]) -> None:
    result = call("bash", command="echo partial; exit 3")
    assert result.is_error
    assert result.content == "partial\n[exit code 3]"
    assert result.details["exit_code"] == 3


def test_killed_by_a_signal_says_so(call: Callable[..., ToolResult]) -> None:
    result = call("bash", command="kill -9 $$")
    assert result.is_error
    assert "killed by signal 9 (SIGKILL)" in result.content


def test_stdin_is_dev_null(call: Callable[..., ToolResult]) -> None:
    result = call("bash", command="cat; read line; echo read=$?")
    assert result.content == "read=1\n[exit code 0]"


@pytest.mark.slow
def test_timeout_kills_grandchildren_even_those_ignoring_term(workspace: Path, call: Callable[..., ToolResult]) -> None:
    command = (
        "sh -c 'sleep 300 & echo $! > grandchild.pid; wait' & "
        "sh -c 'trap \"\" TERM; sleep 300 & echo $! > stubborn.pid; wait' & "
        "echo started; wait"
    )
    began = time.monotonic()
    result = call("bash", command=command, timeout=1)
    elapsed = time.monotonic() - began
    assert result.is_error
    assert result.content.startswith("started\n")
    assert "[timed out after 1 s; the command and its child processes were terminated]" in result.content
    assert result.details["timed_out"] is True
    assert elapsed < 30
    for name in ("grandchild.pid", "stubborn.pid"):
        assert wait_gone(read_pid(workspace / name)), name


@pytest.mark.slow
def test_background_child_holding_stdout_does_not_hang(workspace: Path, call: Callable[..., ToolResult]) -> None:
    began = time.monotonic()
    result = call("bash", command="sleep 300 & echo $! > bg.pid; echo done")
    elapsed = time.monotonic() - began
    pid = read_pid(workspace / "bg.pid")
    try:
        assert not result.is_error
        assert result.content == "done\n[exit code 0]"
        assert elapsed < 60
        assert not gone(pid)  # a background job is left running, not killed
    finally:
        os.kill(pid, signal.SIGKILL)


def test_huge_output_keeps_the_tail_and_saves_the_rest(call: Callable[..., ToolResult]) -> None:
    result = call("bash", command="seq 1 300000")
    assert not result.is_error
    body, note, status = result.content.rsplit("\n", 2)
    rows = body.split("\n")
    assert rows[-1] == "300000"
    assert len(rows) <= 2000
    assert int(rows[0]) == 300000 - len(rows) + 1  # a contiguous tail, whole lines only
    assert note.startswith(f"[output truncated: showing the last {len(rows)} of 300000 lines")
    log = Path(result.details["log"])
    assert note.endswith(f"full output in {log}]")
    assert log.read_text() == "".join(f"{i}\n" for i in range(1, 300001))
    assert status == "[exit code 0]"


def test_huge_single_line_is_cut_on_a_character_boundary(call: Callable[..., ToolResult]) -> None:
    result = call("bash", command="python3 -c \"print('é' * 100000, end='')\"")
    body = result.content.split("\n")[0]
    assert 0 < len(body.encode()) <= 50_000
    assert set(body) == {"é"}


def test_small_output_leaves_no_log_behind(tmp_path: Path, call: Callable[..., ToolResult]) -> None:
    assert not call("bash", command="echo hi").is_error
    assert [p for p in (tmp_path / "logs").rglob("*") if p.is_file()] == []


def test_timeout_above_the_maximum_is_lowered(settings: dict[str, Any], call: Callable[..., ToolResult]) -> None:
    settings["bash_max_timeout"] = 5
    settings["bash_default_timeout"] = 5
    result = call("bash", command="echo ok", timeout=100)
    assert result.content.startswith("[timeout lowered from 100 s to the configured maximum, 5 s]\nok")


def test_tool_timeout_covers_the_configured_maximum() -> None:
    bash = next(t for t in build_tools({"bash_max_timeout": 900}) if t.name == "bash")
    assert bash.timeout is not None and bash.timeout > 900
    assert bash.permission == "exec"
    assert "900 s" in bash.description


@pytest.mark.slow
def test_cancelling_the_call_kills_the_group(workspace: Path, ctx: ToolContext, settings: dict[str, Any]) -> None:
    bash = next(t for t in build_tools(settings) if t.name == "bash")
    pid_file = workspace / "child.pid"

    async def scenario() -> None:
        task = asyncio.create_task(run_tool(bash, {"command": "sleep 300 & echo $! > child.pid; wait"}, ctx))
        while not (pid_file.exists() and pid_file.read_text().strip()):
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert wait_gone(read_pid(pid_file))
