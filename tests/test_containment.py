"""Issue 9, items 3 and 5 (and bash logs of item 4), through the real ``crab`` command with the
scripted mock provider and the real basic tools: grep cannot hang crab, a flood cannot fill the
disk, no tool process outlives crab or its timeout, hard links do not lead out of the workspace."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from crab.testing import process_alive as alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc")

SECRET = "sk-containment-" + "7" * 24


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(home), CRAB_PLUGINS="provider-mock,tools-basic,tape-jsonl", CONTAINMENT_API_KEY=SECRET)
    return env


def write_script(folder: Path, replies: list[list[dict[str, Any]]]) -> Path:
    path = folder / "script.json"
    path.write_text(json.dumps({"replies": replies}))
    return path


def crab_args(script: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "crab", "run", "-m", f"mock/{script}", "--yolo", *extra]


def run(
    workspace: Path, home: Path, replies: list[list[dict[str, Any]]], *extra: str, bound: float = 60
) -> tuple[int, dict[str, Any]]:
    script = write_script(workspace.parent, replies)
    done = subprocess.run(
        [*crab_args(script, "-o", "json", *extra), "go"],
        cwd=workspace,
        env=environment(home),
        capture_output=True,
        text=True,
        timeout=bound,
    )
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def start(workspace: Path, home: Path, replies: list[list[dict[str, Any]]], *extra: str) -> subprocess.Popen[str]:
    script = write_script(workspace.parent, replies)
    return subprocess.Popen(
        [*crab_args(script, *extra), "go"],
        cwd=workspace,
        env=environment(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_pid(path: Path, within: float = 20) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


def gone_soon(pid: int, within: float = 30) -> bool:
    """Whether ``pid`` ends within ``within`` s (returns as soon as it has: a loaded machine may take a while)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


# A grandchild that leaves the tool's process group and session, and writes its pid down.
ESCAPER = "setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' & sleep 300"


# --- item 3: grep --------------------------------------------------------------------------


def test_catastrophic_grep_pattern_is_answered_in_linear_time(workspace: Path, home: Path) -> None:
    (workspace / "x.txt").write_text("x" * 32 + "!\n")
    code, doc = run(
        workspace, home, [[{"tool": "grep", "args": {"pattern": "(x+x+)+y"}}], [{"text": "done"}]],
        "--set", "crab.tool_timeout=3", bound=10,
    )  # fmt: skip
    assert code == 0
    assert doc["tool_calls"][0]["result"].startswith("no matches")


def test_a_pattern_only_python_reads_is_bounded_by_the_tool_timeout(workspace: Path, home: Path) -> None:
    # Look-ahead: ripgrep refuses it, so Python's backtracking re runs it, in a worker process.
    (workspace / "x.txt").write_text("x" * 40 + "!\n")
    code, doc = run(
        workspace, home, [[{"tool": "grep", "args": {"pattern": "(x+x+)+(?=y)"}}], [{"text": "done"}]],
        "--set", "crab.tool_timeout=2", bound=12,
    )  # fmt: skip
    assert code == 0
    assert doc["text"] == "done"
    assert "timed out after 2 s" in doc["tool_calls"][0]["result"]


def test_ctrl_c_during_a_backtracking_grep_exits_130_within_two_seconds(workspace: Path, home: Path) -> None:
    (workspace / "x.txt").write_text("x" * 40 + "!\n")
    crab = start(workspace, home, [[{"tool": "grep", "args": {"pattern": "(x+x+)+(?=y)"}}], [{"text": "done"}]])
    try:
        time.sleep(1.5)
        assert crab.poll() is None
        sent = time.monotonic()
        crab.send_signal(signal.SIGINT)
        crab.wait(timeout=20)
        took = time.monotonic() - sent
    finally:
        crab.kill()
        crab.wait()
    assert crab.returncode == 130
    assert took < 2.0
    # Only this run's workers: other test runs on the machine may have their own.
    ours = f"CRAB_HOME={home}".encode()
    workers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and b"grep_worker" in _cmdline(p)]
    assert not [p for p in workers if ours in _environ(p).split(b"\0")]


def test_a_hostile_gitignore_or_glob_cannot_stall_crab(workspace: Path, home: Path) -> None:
    # Stars within one segment, and ``**`` segments, each backtrack over the others in a regex:
    # a cloned repository's .gitignore, or a model's glob, must still be matched in linear time.
    (workspace / ".gitignore").write_text("*a*a*a*a*a*a*a*a*a*a*a*a*c\n**/a/**/a/**/a/**/a/**/a/**/a/**/c\n")
    (workspace / ("a" * 80 + "b")).write_text("needle\n")
    deep = workspace.joinpath(*["a"] * 40)
    deep.mkdir(parents=True)
    (deep / "b").write_text("needle\n")
    calls = [
        {"tool": "ls", "args": {}},
        {"tool": "glob", "args": {"pattern": "*a*a*a*a*a*a*a*a*a*a*a*a*c"}},
        {"tool": "glob", "args": {"pattern": "**/a/**/a/**/a/**/a/**/a/**/a/**/c"}},
        {"tool": "grep", "args": {"pattern": "needle", "glob": "*a*a*a*a*a*a*a*a*a*a*a*a*b"}},
    ]
    code, doc = run(workspace, home, [calls, [{"text": "done"}]], bound=30)
    assert code == 0, doc
    results = [call["result"] for call in doc["tool_calls"]]
    assert "a" * 80 + "b" in results[0]
    assert results[1].startswith("no files match")
    assert results[2].startswith("no files match")
    assert results[3] == f"{'a' * 80}b:1:needle"


def test_a_gitignore_that_is_a_fifo_or_a_link_to_a_device_is_skipped(workspace: Path, home: Path) -> None:
    # git keeps symlinks, so a cloned .gitignore may point at /dev/zero (read for ever: crab's
    # memory under a 1 GB limit here); git itself does not follow a symlinked .gitignore.
    import resource

    (workspace / "kept.txt").write_text("needle\n")
    (workspace / "sub").mkdir()
    os.mkfifo(workspace / "sub" / ".gitignore")
    (workspace / ".gitignore").symlink_to("/dev/zero")
    script = write_script(
        workspace.parent,
        [[{"tool": "ls", "args": {"path": "sub"}}, {"tool": "glob", "args": {"pattern": "*.txt"}}], [{"text": "done"}]],
    )

    def bounded() -> None:
        limit = 1024 * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = subprocess.run(
        [*crab_args(script, "-o", "json", "--set", "crab.tool_timeout=5"), "go"],
        cwd=workspace, env={**environment(home), "MALLOC_ARENA_MAX": "2"},
        capture_output=True, text=True, timeout=60, preexec_fn=bounded,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    results = [call["result"] for call in json.loads(done.stdout)["tool_calls"]]
    assert results == [".gitignore", "kept.txt"]


def test_terminal_escapes_in_a_file_or_a_reply_do_not_reach_the_terminal(workspace: Path, home: Path) -> None:
    # A cloned file (or a model) can hold escape sequences that retitle, clear or rewrite the
    # user's terminal; crab's progress lines show them as visible text instead.
    (workspace / "evil.txt").write_text("hello \x1b]0;PWNED\x07 \x1b[2J\x9b2J world\n")
    replies = [[{"tool": "read", "args": {"path": "evil.txt"}}], [{"text": "done"}]]
    script = write_script(workspace.parent, replies)
    done = subprocess.run(
        [*crab_args(script), "go"], cwd=workspace, env=environment(home), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "hello" in done.stderr and "world" in done.stderr
    assert not any(c in done.stderr for c in "\x1b\x07\x9b"), done.stderr


def _environ(proc: Path) -> bytes:
    try:
        return (proc / "environ").read_bytes()
    except OSError:
        return b""


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


# --- item 5: floods and escapes ------------------------------------------------------------


def test_yes_flood_leaves_a_bounded_redacted_private_log(workspace: Path, home: Path) -> None:
    command = "for i in $(seq 3000); do echo key=$CONTAINMENT_API_KEY; done; yes"
    code, doc = run(workspace, home, [[{"tool": "bash", "args": {"command": command, "timeout": 2}}], [{"text": "ok"}]])
    assert code == 0
    result = doc["tool_calls"][0]["result"]
    assert "timed out after 2 s" in result
    assert "bytes from the middle were dropped" in result
    logs = [p for p in home.rglob("*") if p.is_file() and "bash-logs" in p.parts]
    assert len(logs) == 1
    assert logs[0].stat().st_size < 6 * 1024 * 1024
    data = logs[0].read_bytes()
    assert b"cut from the middle of this output" in data
    assert SECRET.encode() not in data
    assert SECRET[:12].encode() not in data  # no piece at the cut either
    session_folder, base = logs[0].parent, logs[0].parent.parent
    assert base.name == "bash-logs"
    for folder in (base, session_folder):
        assert folder.stat().st_mode & 0o777 == 0o700
    assert logs[0].stat().st_mode & 0o777 == 0o600


def test_another_session_cannot_read_this_sessions_log(tmp_path: Path, workspace: Path, home: Path) -> None:
    replies = [[{"tool": "bash", "args": {"command": "seq 300000"}}], [{"text": "ok"}]]
    code, doc = run(workspace, home, replies, "--store", "jsonl")
    assert code == 0
    log = doc["tool_calls"][0]["result"].split("full output in ")[1].split("]")[0]
    # The same session may page through it.
    same = [[{"tool": "read", "args": {"path": log, "limit": 2}}], [{"text": "ok"}]]
    _, again = run(workspace, home, same, "--store", "jsonl", "--session", doc["session_id"])
    assert again["tool_calls"][0]["result"].split("\n")[0].endswith("\t1")
    other = tmp_path / "other"
    other.mkdir()
    _, stranger = run(other, home, same)
    assert stranger["tool_calls"][0]["is_error"]
    assert (
        "inside crab's own folder" in stranger["tool_calls"][0]["result"]
    )  # another session's logs are crab's, not the workspace's


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_to_crab_leaves_no_tool_process_behind(workspace: Path, home: Path, sig: signal.Signals) -> None:
    crab = start(workspace, home, [[{"tool": "bash", "args": {"command": ESCAPER}}], [{"text": "done"}]])
    try:
        escaped = wait_for_pid(workspace / "escaped.pid")
        assert alive(escaped)
        crab.send_signal(sig)
        crab.wait(timeout=20)
    finally:
        crab.kill()
        crab.wait()
    assert crab.returncode == 128 + sig
    try:
        assert gone_soon(escaped)
    finally:
        if alive(escaped):
            os.kill(escaped, signal.SIGKILL)
    sessions = home / "sessions"
    if sessions.exists():  # whatever the store, what it wrote still parses
        for file in sessions.rglob("*.jsonl"):
            for line in file.read_text().splitlines():
                json.loads(line)


@pytest.mark.parametrize("gap", [0.0, 0.03, 0.06, 0.1])
def test_a_second_signal_during_the_clean_up_does_not_break_it(workspace: Path, home: Path, gap: float) -> None:
    """The second SIGTERM lands while crab ends its tool processes: still 143 with one line, and
    nothing left running (it raised inside the clean-up: a traceback, exit 1, an escaper left)."""
    crab = start(workspace, home, [[{"tool": "bash", "args": {"command": ESCAPER}}], [{"text": "done"}]])
    try:
        escaped = wait_for_pid(workspace / "escaped.pid")
        crab.send_signal(signal.SIGTERM)
        time.sleep(gap)
        if crab.poll() is None:
            crab.send_signal(signal.SIGTERM)
        _, err = crab.communicate(timeout=20)
    finally:
        crab.kill()
        crab.wait()
    try:
        # 143, or killed by the second signal itself once the interpreter has put the default
        # handlers back at its very end (a shell shows both as 143).
        assert crab.returncode in (128 + signal.SIGTERM, -signal.SIGTERM), err
        assert "Traceback" not in err and "Timeout" not in err
        assert gone_soon(escaped)
    finally:
        if alive(escaped):
            os.kill(escaped, signal.SIGKILL)


def test_bash_timeout_ends_a_setsid_grandchild(workspace: Path, home: Path) -> None:
    replies = [[{"tool": "bash", "args": {"command": ESCAPER, "timeout": 1}}], [{"text": "done"}]]
    crab = start(workspace, home, [*replies[:1], [{"tool": "bash", "args": {"command": "sleep 3"}}], replies[1]])
    try:
        escaped = wait_for_pid(workspace / "escaped.pid")
        # While crab still runs (the second command sleeps), the first one's escapee must be gone.
        assert gone_soon(escaped, within=4)
        crab.wait(timeout=30)
    finally:
        crab.kill()
        crab.wait()
        if alive(escaped):
            os.kill(escaped, signal.SIGKILL)
    assert crab.returncode == 0


def test_normal_end_leaves_no_background_process(workspace: Path, home: Path) -> None:
    command = "setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' > /dev/null 2>&1 &"
    code, _ = run(workspace, home, [[{"tool": "bash", "args": {"command": command}}], [{"text": "done"}]])
    assert code == 0
    escaped = wait_for_pid(workspace / "escaped.pid")
    try:
        assert gone_soon(escaped)
    finally:
        if alive(escaped):
            os.kill(escaped, signal.SIGKILL)


# --- item 5: hard links --------------------------------------------------------------------


def test_a_hard_link_made_before_the_run_is_refused(tmp_path: Path, workspace: Path, home: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("the secret outside\n")
    os.link(outside, workspace / "inside.txt")
    replies = [
        [{"tool": "read", "args": {"path": "inside.txt"}}],
        [{"tool": "grep", "args": {"pattern": "secret"}}],
        [{"tool": "write", "args": {"path": "inside.txt", "content": "x"}}],
        [{"text": "done"}],
    ]
    code, doc = run(workspace, home, replies)
    assert code == 0
    read, grep, write = doc["tool_calls"]
    assert read["is_error"] and "hard links" in read["result"]
    assert "secret" not in grep["result"].replace("'secret'", "")
    assert write["is_error"]
    assert outside.read_text() == "the secret outside\n"


def test_a_hard_link_made_during_the_run_is_refused(tmp_path: Path, workspace: Path, home: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("the secret outside\n")
    (workspace / "notes.txt").write_text("mine\n")
    replies = [
        [{"tool": "read", "args": {"path": "notes.txt"}}],
        [{"tool": "bash", "args": {"command": f"ln -f {outside} notes.txt"}}],
        [{"tool": "read", "args": {"path": "notes.txt"}}],
        [{"tool": "edit", "args": {"path": "notes.txt", "edits": [{"old": "secret", "new": "public"}]}}],
        [{"text": "done"}],
    ]
    code, doc = run(workspace, home, replies)
    assert code == 0
    first, _, second, edit = doc["tool_calls"]
    assert not first["is_error"]
    assert second["is_error"] and "hard links" in second["result"]
    assert edit["is_error"]
    assert outside.read_text() == "the secret outside\n"


def test_chat_sigint_stops_the_turn_and_its_processes_then_sighup_ends_chat(workspace: Path, home: Path) -> None:
    script = write_script(workspace.parent, [[{"tool": "bash", "args": {"command": ESCAPER}}], [{"text": "done"}]])
    args = [sys.executable, "-m", "crab", "chat", "-m", f"mock/{script}", "--yolo"]
    crab = subprocess.Popen(
        args,
        cwd=workspace,
        env=environment(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert crab.stdin is not None
    crab.stdin.write(b"go\n")
    crab.stdin.flush()  # stdin stays open: chat waits for the next line after the turn
    escaped = 0
    try:
        escaped = wait_for_pid(workspace / "escaped.pid")
        crab.send_signal(signal.SIGINT)
        assert gone_soon(escaped)
        time.sleep(0.5)
        assert crab.poll() is None  # chat goes on
        crab.send_signal(signal.SIGHUP)
        crab.wait(timeout=20)
    finally:
        crab.kill()
        crab.wait()
        if escaped and alive(escaped):
            os.kill(escaped, signal.SIGKILL)
    assert crab.returncode == 129
    assert crab.stderr is not None and b"(turn stopped)" in crab.stderr.read()
