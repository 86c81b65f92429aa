"""A resume stores the missing result of a call crab was killed in, once; a real result still wins;
and none while a turn of the session still runs in another process or task (its call is live).

The memory store stands in for any store here (``tests/test_kill_resume_results.py`` kills the
real ``crab`` command on the jsonl and sqlite stores).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from crab import CrabError
from crab._contracts.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from crab._system.live_sessions import no_turn_running, turn_running
from crab._values.history import STOPPED, repair, stand_ins, unpaired_calls
from crab._values.message_json import message_to_dict
from crab.testing import AgentHarness


def stored_results(h: AgentHarness) -> list[tuple[str, str]]:
    entries = h.run_async(h.store.entries(h.session.id))
    return [(e.payload["call_id"], e.payload["content"]) for e in entries if e.type == "tool_result"]


def killed_mid_tool(h: AgentHarness) -> None:
    """What a kill -9 during the second of two calls leaves: the call stored, one result stored."""
    calls = (ToolCall("c1", "bash", {}), ToolCall("c2", "bash", {}))
    reply = AssistantMessage(tool_calls=calls, stop_reason="tool_use")
    for entry_type, message in (
        ("message", UserMessage("run both")),
        ("message", reply),
        ("tool_result", ToolResultMessage("c1", "bash", "one")),
    ):
        h.run_async(h.store.append(h.session.id, entry_type, message_to_dict(message)))


def test_a_resume_stores_the_missing_result_once_and_replays_what_it_stored():
    h = AgentHarness([[{"text": "resumed fine"}]])
    try:
        killed_mid_tool(h)
        resumed = h.run_async(h.agent.resume(h.session.id))
        assert stored_results(h) == [("c1", "one"), ("c2", STOPPED)]
        assert unpaired_calls(resumed.messages) == []
        assert [m.content for m in resumed.messages if isinstance(m, ToolResultMessage)] == ["one", STOPPED]
        again = h.run_async(h.agent.resume(h.session.id))
        assert stored_results(h) == [("c1", "one"), ("c2", STOPPED)]  # once, not on every resume
        assert again.messages == resumed.messages
        h.session = again
        assert h.run("go on").text == "resumed fine"
        assert h.requests[-1].messages[:4] == tuple(resumed.messages)
    finally:
        h.close()


def test_a_paired_session_is_left_as_it_is():
    h = AgentHarness([[{"tool": "t", "args": {}}], [{"text": "done"}]])
    try:
        h.run("go")
        before = h.run_async(h.store.entries(h.session.id))
        h.run_async(h.agent.resume(h.session.id))
        assert h.run_async(h.store.entries(h.session.id)) == before
    finally:
        h.close()


def test_a_real_result_stored_after_the_stand_in_wins():
    # Another process still ran the tool when this one resumed: its answer must not be hidden.
    call = ToolCall("c1", "bash", {})
    messages = [UserMessage("q"), AssistantMessage(tool_calls=(call,), stop_reason="tool_use")]
    (stand_in,) = stand_ins(messages)
    assert stand_in == ToolResultMessage("c1", "bash", STOPPED, is_error=True)
    late = ToolResultMessage("c1", "bash", "the real output")
    fixed = repair([*messages, stand_in, late])
    assert [m for m in fixed if isinstance(m, ToolResultMessage)] == [late]
    assert stand_ins([*messages, stand_in]) == []


def test_shared_ids_get_one_stand_in_per_unanswered_call():
    first = AssistantMessage(tool_calls=(ToolCall("call_0", "t", {}),), stop_reason="tool_use")
    second = AssistantMessage(tool_calls=(ToolCall("call_0", "t", {}),), stop_reason="tool_use")
    messages = [UserMessage("q"), first, ToolResultMessage("call_0", "t", "first"), second]
    missing = stand_ins(messages)
    assert [m.content for m in missing] == [STOPPED]
    fixed = repair([*messages, *missing])
    assert [m.content for m in fixed if isinstance(m, ToolResultMessage)] == ["first", STOPPED]
    assert stand_ins([*messages, *missing]) == []


# --- a live writer: its calls are not stopped -------------------------------------------------

HOLDER = """
import asyncio, sys
from pathlib import Path
from crab._system.live_sessions import turn_running

async def main():
    async with turn_running(Path(sys.argv[1]), sys.argv[2]):
        print("held", flush=True)
        sys.stdin.readline()

asyncio.run(main())
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CRAB_HOME", str(tmp_path))
    return tmp_path


def hold_in_another_process(home: Path, session_id: str) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home), session_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def alone(home: Path, session_id: str) -> bool:
    with no_turn_running(home, session_id) as result:
        return result


def test_a_turn_in_another_process_is_seen_until_that_process_is_killed(home: Path) -> None:
    assert alone(home, "s1")
    holder = hold_in_another_process(home, "s1")
    try:
        assert not alone(home, "s1")
        assert alone(home, "s2")  # each session its own lock
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    assert alone(home, "s1")


def test_a_resume_while_another_process_runs_the_turn_stores_no_stand_in(home: Path) -> None:
    h = AgentHarness([[{"text": "resumed fine"}]])
    try:
        killed_mid_tool(h)  # c2 has no result yet: here because its process is still running it
        holder = hold_in_another_process(home, h.session.id)
        try:
            resumed = h.run_async(h.agent.resume(h.session.id))
            assert stored_results(h) == [("c1", "one")]
            assert unpaired_calls(resumed.messages) == []  # the context still pairs every call
        finally:
            os.kill(holder.pid, signal.SIGKILL)
            holder.wait()
        h.run_async(h.agent.resume(h.session.id))  # that process is gone: c2 will get no result
        assert stored_results(h) == [("c1", "one"), ("c2", STOPPED)]
    finally:
        h.close()


def test_a_resume_during_a_turn_of_this_process_stores_no_stand_in(home: Path) -> None:
    h = AgentHarness([[{"text": "unused"}]])
    try:
        killed_mid_tool(h)

        async def resume_while_running() -> None:
            async with turn_running(home, h.session.id):
                await h.agent.resume(h.session.id)

        h.run_async(resume_while_running())
        assert stored_results(h) == [("c1", "one")]
    finally:
        h.close()


def test_a_turn_waits_for_a_resume_in_this_process_without_blocking_its_loop(home: Path) -> None:
    async def scenario() -> list[str]:
        order: list[str] = []

        async def turn() -> None:
            async with turn_running(home, "s"):
                order.append("turn")

        with no_turn_running(home, "s") as got:
            assert got
            task = asyncio.create_task(turn())
            await asyncio.sleep(0.05)  # the loop runs on: the turn waits, it does not block
            order.append("repaired")
        await asyncio.wait_for(task, 10)
        return order

    assert asyncio.run(scenario()) == ["repaired", "turn"]


def test_a_home_that_cannot_hold_locks_leaves_resume_as_it_was(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert alone(blocked, "s")  # no liveness known: the resume repairs


# --- an odd $CRAB_HOME/live: nothing outside the home, no hang, no traceback --------------------


def test_a_live_folder_linked_elsewhere_creates_nothing_there(
    home: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (home / "live").symlink_to(elsewhere, target_is_directory=True)
    assert alone(home, "s")  # no liveness known there: the resume repairs, as without flock
    assert list(elsewhere.iterdir()) == []


def lock_path(home: Path, session_id: str) -> Path:
    """Where ``session_id``'s lock file is while held (it is removed when the last holder lets go)."""
    with no_turn_running(home, session_id):
        (lock,) = (home / "live").iterdir()
    assert not lock.exists()
    return lock


def test_a_lock_file_linked_elsewhere_is_not_followed(home: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    lock = lock_path(home, "s")
    target = tmp_path_factory.mktemp("elsewhere") / "created"
    lock.symlink_to(target)
    assert alone(home, "s")
    assert not target.exists()


def test_a_fifo_in_place_of_the_lock_neither_blocks_nor_locks(home: Path) -> None:
    lock = lock_path(home, "s")
    os.mkfifo(lock)
    checked = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from crab._system.live_sessions import "
            "no_turn_running as n\nwith n(Path(sys.argv[1]), 's') as a: print(a)",
            str(home),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.stdout == "True\n", checked.stderr


def test_a_session_id_that_is_not_utf8_is_no_session_not_a_traceback(home: Path) -> None:
    h = AgentHarness([[{"text": "unused"}]])
    try:
        with pytest.raises(CrabError, match="no session"):
            h.run_async(h.agent.resume("\udcff"))  # what a command line's non-UTF-8 byte becomes
    finally:
        h.close()


def test_lock_files_go_when_the_last_holder_lets_go(home: Path) -> None:
    # crab-http makes a session per request: a file per session would grow without end.
    h = AgentHarness([[{"text": "one"}], [{"text": "two"}]])
    try:
        h.run("first")
        h.run_async(h.agent.resume(h.session.id))
        h.run("second")
        assert list((home / "live").iterdir()) == []
    finally:
        h.close()


def test_a_lock_taken_on_a_removed_file_is_taken_again_on_the_paths_new_one(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A turn opened the file just before the last holder removed it: a lock on that file is
    # nobody's, and a resume taking the path's new file would think it alone.
    import fcntl

    from crab._system import live_sessions

    stale = live_sessions._open(home, "s")
    assert stale is not None
    stale.remove()
    first = [stale]
    opening = live_sessions._open
    monkeypatch.setattr(live_sessions, "_open", lambda h, s: first.pop() if first else opening(h, s))
    lock, held = live_sessions._lock(home, "s", fcntl.LOCK_SH)
    assert lock is not None and held and lock.current()
    try:
        assert not alone(home, "s")  # a resume sees the turn
    finally:
        lock.close()


def test_with_no_home_folder_at_all_a_turn_and_a_resume_run_with_no_liveness(monkeypatch: pytest.MonkeyPatch) -> None:
    # A program on a memory store in a container's arbitrary uid (no $HOME, no passwd entry).
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    h = AgentHarness([[{"text": "fine"}]])
    try:
        monkeypatch.delenv("CRAB_HOME", raising=False)
        monkeypatch.setattr(Path, "home", staticmethod(no_home))
        killed_mid_tool(h)
        h.run_async(h.agent.resume(h.session.id))
        assert stored_results(h) == [("c1", "one"), ("c2", STOPPED)]
        assert h.run("go on").text == "fine"
    finally:
        h.close()
