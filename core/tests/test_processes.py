"""crab.processes: tool processes are tagged, found below crab (subreaper) and ended, setsid or not."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import crab
import pytest
from crab import processes
from crab.testing import process_alive as alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="subreaper and /proc are Linux's")


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def wait_for_file(path: Path) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def test_a_setsid_grandchild_is_found_by_its_tag_and_ended(tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"
    tag = processes.new_tag()
    # The shell starts a setsid grandchild and exits: the grandchild leaves the group and the
    # shell, and (crab being a subreaper) is re-parented to this process.
    shell = subprocess.Popen(
        ["sh", "-c", f"setsid sh -c 'echo $$ > {marker}; exec sleep 300' &"], **processes.spawn_options(tag)
    )
    processes.track(shell.pid, tag)
    shell.wait(10)
    grandchild = wait_for_file(marker)
    try:
        assert processes.enable_subreaper()
        assert os.getpgid(grandchild) != shell.pid  # not reachable through the group
        assert grandchild in {p.pid for p in processes.descendants()}
        assert processes.has_tag(grandchild, tag)
        processes.terminate(shell.pid, tag, grace=1.0)
        assert not alive(grandchild)
    finally:
        processes.untrack(shell.pid)
        if alive(grandchild):
            os.kill(grandchild, 9)


def test_terminate_leaves_other_tags_alone(tmp_path: Path) -> None:
    mine, other = processes.new_tag(), processes.new_tag()
    a = subprocess.Popen(["sleep", "300"], **processes.spawn_options(mine))
    b = subprocess.Popen(["sleep", "300"], **processes.spawn_options(other))
    try:
        processes.terminate(a.pid, mine, grace=1.0)
        assert a.wait(5) is not None
        assert b.poll() is None
    finally:
        b.kill()
        b.wait()
        a.kill()
        a.wait()


def test_run_bounded_is_ended_when_stop_is_set() -> None:
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    started = time.monotonic()
    with pytest.raises(processes.Stopped):
        processes.run_bounded(["sh", "-c", "sleep 307 & sleep 307"], stop)
    assert time.monotonic() - started < 5
    left = [p for p in processes.descendants() if p.state != "Z" and b"307" in cmdline(p.pid)]
    assert not left


def test_run_bounded_raises_stopped_only_once_its_processes_are_gone(tmp_path: Path) -> None:
    # A killed process is not gone until it has been scheduled and has freed its memory: this one
    # (below a shell, SIGTERM ignored, a quarter of a GiB touched) takes ~0.15 s after SIGKILL on
    # a quiet machine and far longer under load, which is how a "sleep 307" was once seen alive
    # after Stopped (run_bounded waits for its own child, the shell, but not for what is below).
    marker = tmp_path / "pid"
    program = (
        "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "b = bytearray(256 << 20); b[::4096] = b'x' * len(b[::4096]); "
        f"open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(300)"
    )
    stop = threading.Event()

    def stop_once_up() -> None:
        wait_for_file(marker)
        stop.set()

    threading.Thread(target=stop_once_up, daemon=True).start()
    with pytest.raises(processes.Stopped):
        processes.run_bounded(["sh", "-c", '"$0" -c "$1" & wait', sys.executable, program], stop, grace=0.2)
    assert not alive(int(marker.read_text()))


def test_run_bounded_returns_output_and_feeds_input() -> None:
    done = processes.run_bounded(["sh", "-c", "cat; echo err >&2; exit 3"], input=b"hello")
    assert (done.returncode, done.stdout, done.stderr) == (3, b"hello", b"err\n")


def test_process_table_parses_names_with_parentheses(tmp_path: Path) -> None:
    odd = tmp_path / "a) b (c"
    odd.symlink_to("/bin/sleep")
    child = subprocess.Popen([str(odd), "300"])
    try:
        found = {p.pid: p for p in processes.descendants()}
        assert found[child.pid].ppid == os.getpid()
    finally:
        child.kill()
        child.wait()


def test_run_bounded_feeds_input_larger_than_a_pipe_to_a_slow_reader() -> None:
    data = b"x" * (1 << 21)
    done = processes.run_bounded(["sh", "-c", "sleep 0.3; wc -c"], input=data)
    assert done.stdout.strip() == str(len(data)).encode()


def test_a_command_wrapper_sees_the_tool_call_and_replaces_the_argv(tmp_path: Path) -> None:
    seen: list[processes.Launch] = []

    def wrapper(launch: processes.Launch) -> list[str]:
        seen.append(launch)
        return ["sh", "-c", 'echo wrapped "$@"', "sh", *launch.argv]

    @crab.tool(permission="exec")
    def shout(text: str, ctx: crab.ToolContext) -> str:
        """Echo text through a process."""
        done = processes.run_bounded(["echo", text], cwd=ctx.workspace)
        return done.stdout.decode()

    ctx = crab.ToolContext(session_id="s", workspace=tmp_path)
    remove = processes.add_command_wrapper(wrapper)
    try:
        assert processes.wrap_command(["true"]) == ["sh", "-c", 'echo wrapped "$@"', "sh", "true"]
        result = asyncio.run(crab.tools.run_tool(shout, {"text": "hi"}, ctx))
    finally:
        remove()
    assert result.content == "wrapped echo hi\n"
    outside, inside = seen
    assert (outside.tool, outside.permission, outside.context) == ("", "", None)
    assert (inside.argv, inside.cwd, inside.tool, inside.permission) == (("echo", "hi"), tmp_path, "shout", "exec")
    assert inside.context is ctx
    # removed: commands start as they are again, and removing twice is harmless
    assert processes.wrap_command(["true"]) == ["true"]
    remove()


def test_a_start_outside_a_tool_call_names_its_starter() -> None:
    # crab-mcp starts a server from crab_startup, or again inside some tool call of another tool:
    # either way the wrapper must see the server, not whatever call happens to be running.
    seen: list[processes.Launch] = []
    server_ctx = crab.ToolContext(session_id="", workspace=Path("/srv"))

    @crab.tool(permission="read")
    def lookup(ctx: crab.ToolContext) -> str:
        """Start a server while this call runs."""
        processes.wrap_command(["server"], tool="mcp:notes", permission="network", context=server_ctx)
        return "ok"

    remove = processes.add_command_wrapper(lambda launch: seen.append(launch))
    try:
        processes.wrap_command(["server"], "/srv", tool="mcp:notes", permission="network", context=server_ctx)
        asyncio.run(crab.tools.run_tool(lookup, {}, crab.ToolContext(session_id="s", workspace=Path("/w"))))
    finally:
        remove()
    assert [(launch.tool, launch.permission, launch.context) for launch in seen] == [
        ("mcp:notes", "network", server_ctx),
        ("mcp:notes", "network", server_ctx),
    ]
    assert seen[0].cwd == Path("/srv") and seen[1].cwd is None


def test_a_wrapper_that_refuses_fails_the_start_not_crab() -> None:
    def refuse(launch: processes.Launch) -> None:
        raise crab.ToolError("the sandbox is required and cannot start")

    remove = processes.add_command_wrapper(refuse)
    try:
        with pytest.raises(crab.ToolError, match="sandbox is required"):
            processes.run_bounded(["true"])
    finally:
        remove()
    assert processes.run_bounded(["true"]).returncode == 0


OWNER = """
import subprocess, sys
from crab import processes
tag = processes.new_tag()
child = subprocess.Popen(["sleep", "3186"], **processes.spawn_options(tag))
processes.track(child.pid, tag)
print(child.pid, flush=True)
sys.stdin.read()
"""


def test_a_tracked_group_ends_when_its_owner_is_killed_outright(tmp_path: Path) -> None:
    """SIGKILL runs none of crab's exit paths; the group watcher still ends what it started."""
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    pid = 0
    try:
        assert owner.stdout is not None
        pid = int(owner.stdout.readline())
        assert alive(pid)
        owner.kill()
        owner.wait(timeout=30)
        deadline = time.monotonic() + 30
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        if pid and alive(pid):
            os.kill(pid, 9)


def test_a_cancel_while_starting_ends_what_started_children_included(tmp_path: Path) -> None:
    """``processes.start``: the child already runs (and forked) when the cancel reaches the
    caller, which asyncio alone would answer by killing the child only, orphaning its own."""
    pid_file = tmp_path / "grandchild.pid"
    command = f"sleep 3192 & echo $! > {pid_file}; wait"

    async def go() -> None:
        starting = asyncio.ensure_future(processes.start(["sh", "-c", command], processes.new_tag()))
        await asyncio.sleep(0)  # the start has forked the shell and now waits for its pipes
        deadline = time.monotonic() + 10
        while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.02)  # the loop held: the caller has not resumed while the shell forks
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starting

    grandchild = 0
    try:
        asyncio.run(go())
        grandchild = int(pid_file.read_text())
        deadline = time.monotonic() + 10
        while alive(grandchild) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(grandchild)
    finally:
        if grandchild and alive(grandchild):
            os.kill(grandchild, 9)


def test_start_tracks_what_it_started(tmp_path: Path) -> None:
    async def go() -> int:
        process = await processes.start(["sh", "-c", "exit 3"], processes.new_tag(), stdin=subprocess.DEVNULL)
        try:
            return await process.wait()
        finally:
            processes.untrack(process.pid)

    assert asyncio.run(go()) == 3


def test_an_untagged_child_of_a_running_member_is_ended_with_it(tmp_path: Path) -> None:
    """A child that dropped the tag and left the session is still below its parent, which is in
    the group being ended: it goes with it."""
    marker = tmp_path / "untagged.pid"
    tag = processes.new_tag()
    inner = f"echo $$ > {marker}; exec sleep 3194"
    shell = subprocess.Popen(
        ["sh", "-c", f"env -u {processes.TAG_VARIABLE} setsid sh -c '{inner}' & wait"], **processes.spawn_options(tag)
    )
    processes.track(shell.pid, tag)
    child = wait_for_file(marker)
    try:
        assert not processes.has_tag(child, tag) and os.getpgid(child) != shell.pid
        processes.terminate(shell.pid, tag, grace=1.0)
        shell.wait(10)
        deadline = time.monotonic() + 10
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(child)
    finally:
        processes.untrack(shell.pid)
        if alive(child):
            os.kill(child, 9)
