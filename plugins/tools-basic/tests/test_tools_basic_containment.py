"""Containment in tools-basic: capped and redacted bash logs, hard links, undecodable file names,
the ripgrep wheel, and grep's killable Python worker."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crab import ToolContext, ToolError, ToolResult
from crab.secrets import REDACTED
from crab_tools_basic import bash_log, grep_engine
from crab_tools_basic.bash_log import Capture
from crab_tools_basic.search import search
from crab_tools_basic.workspace import Workspace, workspace_of

SECRET = "sk-tools-basic-" + "5" * 25


# --- bash logs -----------------------------------------------------------------------------


def test_capture_keeps_head_and_tail_and_counts_the_rest() -> None:
    capture = Capture(head_limit=10, tail_limit=20)
    for i in range(1000):
        capture.feed(b"%04d\n" % i)
    data = bash_log.render(capture, [])
    assert data.startswith(b"0000\n0001\n")
    assert data.endswith(b"0996\n0997\n0998\n0999\n")
    assert capture.total == 5000
    assert capture.dropped == 5000 - 10 - 20
    assert b"[crab: 4970 bytes (994 lines) cut from the middle" in data


def test_secrets_are_masked_whole_and_where_the_cut_splits_them() -> None:
    capture = Capture(head_limit=len(SECRET) // 2 + 6, tail_limit=len(SECRET) // 2 + 6)
    capture.feed(b"key = " + SECRET.encode())  # its first half ends the head
    capture.feed(b"\n" * 5000)
    capture.feed(SECRET.encode() + b" end\n")  # its second half starts the tail
    data = bash_log.render(capture, [SECRET]).decode()
    head, tail = data.split("[crab:")
    assert head.startswith("key = " + REDACTED)
    assert tail.rstrip().endswith(REDACTED + " end")
    for size in range(4, len(SECRET)):
        assert SECRET[:size] not in data
        assert SECRET[-size:] not in data


def test_whole_output_is_redacted_across_reads() -> None:
    capture = Capture()
    text = f"one {SECRET} two\n".encode()
    for i in range(len(text)):
        capture.feed(text[i : i + 1])  # a secret arriving one byte at a time
    assert bash_log.render(capture, [SECRET]) == f"one {REDACTED} two\n".encode()


def test_bash_writes_redacted_logs_in_a_private_per_session_folder(
    tmp_path: Path, call: Callable[..., ToolResult], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLS_BASIC_TEST_API_KEY", SECRET)
    result = call("bash", command="for i in $(seq 3000); do echo $TOOLS_BASIC_TEST_API_KEY; done")
    assert SECRET not in result.content
    log = Path(result.details["log"])
    assert SECRET.encode() not in log.read_bytes()
    assert log.parent.name == "test-session"
    assert log.parent.stat().st_mode & 0o777 == 0o700
    assert log.parent.parent.stat().st_mode & 0o777 == 0o700
    assert log.stat().st_mode & 0o777 == 0o600


def test_a_sessions_existing_log_folder_is_made_private_but_not_a_users_own_folder(tmp_path: Path) -> None:
    base = tmp_path / "logs"
    (base / "s1").mkdir(parents=True)
    base.chmod(0o755)
    (base / "s1").chmod(0o755)
    log = bash_log.new_log_path(base, "s1")
    assert base.stat().st_mode & 0o777 == 0o755  # output_dir may be a folder of the user's: left alone
    assert log.parent.stat().st_mode & 0o777 == 0o700
    fresh = bash_log.new_log_path(tmp_path / "new-base", "s2")
    assert fresh.parent.parent.stat().st_mode & 0o777 == 0o700


def test_old_session_logs_are_swept_but_not_the_current_ones(tmp_path: Path) -> None:
    base = tmp_path / "logs"
    old = bash_log.new_log_path(base, "old")
    current = bash_log.new_log_path(base, "current")
    recent = bash_log.new_log_path(base, "recent")
    week_ago = time.time() - 8 * 86_400
    for path in (old, old.parent, current, current.parent):
        os.utime(path, (week_ago, week_ago))
    assert bash_log.sweep(base, 7, keep="current") == 1
    assert not old.parent.exists()
    assert current.exists() and recent.exists()
    assert bash_log.sweep(base, 0.0, keep="current", now=time.time() + 1) == 1
    assert current.exists() and not recent.exists()


def test_only_this_sessions_logs_are_readable(tmp_path: Path, settings: dict[str, Any]) -> None:
    mine = bash_log.new_log_path(Path(settings["output_dir"]), "mine")
    theirs = bash_log.new_log_path(Path(settings["output_dir"]), "theirs")
    ws_root = tmp_path / "ws2"
    ws_root.mkdir()
    ws = workspace_of(ToolContext(session_id="mine", workspace=ws_root, settings=settings))
    assert ws.resolve(str(mine)) == mine.resolve()
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.resolve(str(theirs))


def test_retention_must_be_a_number_of_days(settings: dict[str, Any], call: Callable[..., ToolResult]) -> None:
    settings["bash_log_retention_days"] = "soon"
    with pytest.raises(Exception, match="bash_log_retention_days"):
        call("ls")


# --- hard links ----------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside.txt"
    path.write_text("secret outside\n")
    return path


def test_read_edit_write_and_grep_refuse_a_hard_link(
    workspace: Path, outside: Path, call: Callable[..., ToolResult]
) -> None:
    os.link(outside, workspace / "link.txt")
    read = call("read", path="link.txt")
    assert read.is_error and "2 hard links" in read.content and "allow_hardlinks" in read.content
    assert call("edit", path="link.txt", edits=[{"old": "secret", "new": "x"}]).is_error
    assert call("write", path="link.txt", content="x").is_error
    assert call("grep", pattern="secret").content.startswith("no matches")
    assert call("grep", pattern="(secret)\\1|secret (?=outside)").content.startswith("no matches")  # worker
    assert outside.read_text() == "secret outside\n"


def test_a_link_made_after_the_read_is_caught_at_the_edit(
    workspace: Path, outside: Path, call: Callable[..., ToolResult]
) -> None:
    (workspace / "a.txt").write_text("secret outside\n")
    assert not call("read", path="a.txt").is_error
    os.link(workspace / "a.txt", outside.with_name("second-name.txt"))
    assert "hard links" in call("edit", path="a.txt", edits=[{"old": "secret", "new": "x"}]).content


def test_allow_hardlinks_lets_them_through(
    workspace: Path, outside: Path, settings: dict[str, Any], call: Callable[..., ToolResult]
) -> None:
    settings["allow_hardlinks"] = True
    os.link(outside, workspace / "link.txt")
    assert call("read", path="link.txt").content == "     1\tsecret outside"
    assert call("grep", pattern="secret").content == "link.txt:1:secret outside"


# --- file names that are not UTF-8 ---------------------------------------------------------


def test_undecodable_file_names_round_trip(workspace: Path, call: Callable[..., ToolResult]) -> None:
    raw = os.fsencode(workspace) + b"/caf\xe9.txt"
    with open(raw, "wb") as handle:
        handle.write(b"hello\n")
    name = "caf\udce9.txt"
    assert name in call("ls").content.split("\n")
    assert call("glob", pattern="*.txt").content == name
    assert call("grep", pattern="hello").content == f"{name}:1:hello"
    assert call("grep", pattern="(h)ello\\b(?!x)").content == f"{name}:1:hello"  # the Python worker
    assert call("read", path=name).content == "     1\thello"
    assert not call("edit", path=name, edits=[{"old": "hello", "new": "bye"}]).is_error
    assert not call("write", path=name, content="again\n").is_error
    with open(raw, "rb") as handle:
        assert handle.read() == b"again\n"


# --- grep's engines ------------------------------------------------------------------------


def test_ripgrep_comes_from_the_wheel() -> None:
    grep_engine.find_rg.cache_clear()
    rg = grep_engine.find_rg()
    assert rg is not None and os.access(rg, os.X_OK)


def test_a_backtracking_pattern_in_the_worker_is_killed_when_the_call_stops(workspace: Path) -> None:
    (workspace / "x.txt").write_text("x" * 40 + "!\n")
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    started = time.monotonic()
    with pytest.raises(ToolError, match="cancelled"):
        search(Workspace(workspace), "(x+x+)+(?=y)", stop=stop)
    assert time.monotonic() - started < 5


def test_ripgrep_answers_the_catastrophic_pattern_at_once(workspace: Path) -> None:
    (workspace / "x.txt").write_text("x" * 40 + "!\n")
    assert search(Workspace(workspace), "(x+x+)+y", backend="rg").startswith("no matches")


def test_an_invalid_pattern_is_refused_before_any_process(workspace: Path) -> None:
    with pytest.raises(ToolError, match="not a valid regular expression"):
        search(Workspace(workspace), "(unclosed")
