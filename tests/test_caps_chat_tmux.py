"""Issue 24's capabilities driven as a user would: ``crab chat`` (crab-render-rich's live input)
inside tmux, the scripted ``mock`` provider, the jsonl store; a subagent whose live line shows
while it works, and background shells started, read, listed, killed and ended by ``/new`` (their
processes checked in /proc), at the plain line prompt too."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crab.storage import Entry
from crab.testing import TmuxScreen
from crab.testing import process_alive as alive
from crab_tape_jsonl import TapeStore

CRAB = Path(sys.executable).with_name("crab")
PLUGINS = "provider-mock,tape-jsonl,render-rich,tools-basic,subagents"
EXITED = "CRAB-TEST-EXITED"
"""What a ``TmuxScreen`` shows, with the exit status, once its program has ended."""
WAIT = 60.0
"""Seconds a screen or process condition may take (an upper bound: the machine is shared)."""

pytestmark = [
    pytest.mark.filterwarnings("ignore::crab_tape_jsonl.TornLineWarning"),
    pytest.mark.skipif(not CRAB.exists(), reason=f"no crab command next to {sys.executable}"),
]


def until(what: str, check: Callable[[], Any], timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def pid_in(path: Path) -> int:
    text = until(f"a pid in {path.name}", lambda: path.exists() and path.read_text().strip())
    return int(text)


def send(screen: TmuxScreen, line: str) -> None:
    """Type ``line`` and press Enter."""
    screen.type(line)
    screen.keys("Enter")


class Chat:
    """A project folder, a CRAB_HOME, script files for the mock provider, and chat in tmux."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "project"
        self.home.mkdir()
        self.project.mkdir()

    def script(self, name: str, replies: list[Any]) -> Path:
        path = self.root / f"{name}.json"
        path.write_text(json.dumps({"replies": replies}), encoding="utf-8")
        return path

    def agent(self, name: str, script: Path) -> None:
        folder = self.home / "agents"
        folder.mkdir(exist_ok=True)
        front = f"name: {name}\ndescription: the {name} agent\nmodel: mock/{script}"
        (folder / f"{name}.md").write_text(f"---\n{front}\n---\nYou are {name}.\n", encoding="utf-8")

    def start(self, crab_screen: Callable[..., TmuxScreen], script: Path) -> TmuxScreen:
        """``crab chat`` on ``script`` in tmux, once its prompt shows."""
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("CRAB_", "TMUX")) and not k.endswith("_API_KEY")
        }
        env.update(CRAB_HOME=str(self.home), CRAB_PLUGINS=PLUGINS)
        command = [str(CRAB), "chat", "--store", "jsonl", "--yolo", "-m", f"mock/{script}"]
        return crab_screen(command, cwd=self.project, env=env, width=110, height=45, ready="❯")

    def sessions(self) -> dict[str, tuple[dict[str, Any], list[Entry]]]:
        async def read() -> dict[str, tuple[dict[str, Any], list[Entry]]]:
            store = TapeStore(self.home / "sessions")
            await store.open()
            try:
                listed = await store.list_sessions(None, limit=100)
                return {info.id: (dict(info.meta), await store.entries(info.id)) for info in listed}
            finally:
                await store.close()

        return asyncio.run(read())


@pytest.fixture
def chat(tmp_path: Path) -> Chat:
    return Chat(tmp_path)


def unpaired(entries: list[Entry]) -> list[str]:
    calls = [str(c["id"]) for e in entries if e.type == "message" for c in e.payload.get("tool_calls", ()) or ()]
    results = [str(e.payload.get("call_id")) for e in entries if e.type == "tool_result"]
    return [f"call {c}: {results.count(c)} results" for c in calls if results.count(c) != 1]


def said(entries: list[Entry], role: str) -> list[str]:
    return [str(e.payload.get("content")) for e in entries if e.type == "message" and e.payload.get("role") == role]


def test_a_subagent_shows_its_live_line_while_it_works_then_the_parent_answers(
    chat: Chat, crab_screen: Callable[..., TmuxScreen]
) -> None:
    flag = chat.project / "go.flag"
    wait = f"while [ ! -e {shlex.quote(str(flag))} ]; do sleep 0.05; done; echo the helper saw the flag"
    chat.agent(
        "helper",
        chat.script(
            "helper",
            [
                [{"tool": "bash", "id": "h1", "args": {"command": wait}}],
                [{"text": "helper: the flag is there"}],
            ],
        ),
    )
    task = {"description": "wait for the flag", "prompt": "wait for the flag", "agent": "helper"}
    parent = chat.script(
        "parent", [[{"tool": "task", "id": "t1", "args": task}], [{"text": "PARENT: the helper is done"}]]
    )
    screen = chat.start(crab_screen, parent)
    send(screen, "ask the helper")
    # The child's one live line: its label, what it is doing (the bash call), its tool count.
    shown = screen.wait_for(
        lambda s: any("helper" in line and "bash" in line and "1 tool" in line for line in s.splitlines())
    )
    assert "PARENT: the helper is done" not in shown
    assert "helper: the flag is there" not in shown  # a child's prose stays out of the parent's answer
    flag.touch()
    screen.wait_for("PARENT: the helper is done")
    after = screen.wait_for(lambda s: not any("helper ·" in line and "1 tool ·" in line for line in s.splitlines()))
    assert "PARENT: the helper is done" in after  # the live line went when the child ended
    screen.keys("C-d")
    screen.wait_for(f"{EXITED} 0")

    stored = chat.sessions()
    (child_id,) = [s for s, (meta, _) in stored.items() if meta.get("crab.child_label") == "helper"]
    (parent_id,) = [s for s, (meta, _) in stored.items() if not meta.get("crab.parent_session")]
    assert said(stored[child_id][1], "assistant")[-1] == "helper: the flag is there"
    assert said(stored[parent_id][1], "assistant")[-1] == "PARENT: the helper is done"
    results = [e.payload for e in stored[child_id][1] if e.type == "tool_result"]
    assert "the helper saw the flag" in str(results[0].get("content"))
    assert unpaired(stored[child_id][1]) == [] and unpaired(stored[parent_id][1]) == []


def test_background_shells_are_read_listed_killed_and_end_with_the_session_left(
    chat: Chat, crab_screen: Callable[..., TmuxScreen]
) -> None:
    one, two = chat.project / "one.pid", chat.project / "two.pid"
    replies = [
        # "start one"
        [
            {
                "tool": "bash",
                "args": {"command": "echo $$ > one.pid; echo first-job-up; exec sleep 3191", "background": True},
            }
        ],
        [{"tool": "bash", "args": {"command": "while [ ! -s one.pid ]; do sleep 0.02; done"}}],
        [{"tool": "bash_output", "args": {"job_id": "job-1"}}],
        [{"text": "JOB ONE RUNS"}],
        # "stop it"
        [{"tool": "bash_kill", "args": {"job_id": "job-1"}}],
        [{"text": "JOB ONE STOPPED"}],
        # "start two"
        [{"tool": "bash", "args": {"command": "echo $$ > two.pid; exec sleep 3192", "background": True}}],
        [{"tool": "bash", "args": {"command": "while [ ! -s two.pid ]; do sleep 0.02; done"}}],
        [{"text": "JOB TWO RUNS"}],
    ]
    screen = chat.start(crab_screen, chat.script("jobs", replies))
    send(screen, "start one")
    screen.wait_for("JOB ONE RUNS")
    first = pid_in(one)
    assert alive(first)
    old = chat.sessions()
    (session_id,) = old
    outputs = [
        e.payload for e in old[session_id][1] if e.type == "tool_result" and e.payload.get("name") == "bash_output"
    ]
    read = str(outputs[-1].get("content")) if outputs else ""
    assert "first-job-up" in read and "[job-1 is running (" in read  # the model read the job's output

    send(screen, "/jobs")
    screen.wait_for(lambda s: any(line.split()[:2] == ["job-1", "running"] for line in s.splitlines()))

    send(screen, "stop it")
    screen.wait_for("JOB ONE STOPPED")
    until("job-1's process to be gone", lambda: not alive(first))
    send(screen, "/jobs")
    screen.wait_for(lambda s: any(line.split()[:2] == ["job-1", "killed"] for line in s.splitlines()))

    send(screen, "start two")
    screen.wait_for("JOB TWO RUNS")
    second = pid_in(two)
    assert alive(second)
    before = chat.sessions()[session_id][1]

    send(screen, "/new")
    screen.wait_for("new session ")
    until("job-2's process to end with the session left", lambda: not alive(second))
    assert EXITED not in screen.text()  # ended by /new, not by crab's exit
    send(screen, "/jobs")
    screen.wait_for("no background jobs in this session")
    screen.keys("C-d")
    screen.wait_for(f"{EXITED} 0")

    stored = chat.sessions()
    assert len(stored) == 2
    entries = stored[session_id][1]
    assert [e.id for e in entries] == [e.id for e in before]  # the old session, whole and unchanged
    assert said(entries, "user") == ["start one", "stop it", "start two"]
    assert said(entries, "assistant")[-1] == "JOB TWO RUNS"
    assert unpaired(entries) == []
    for pid in (first, second):
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_new_at_the_plain_prompt_ends_the_jobs_of_the_session_left(chat: Chat) -> None:
    """The same through core's line prompt (no live input: stdin is a pipe, not a terminal)."""
    replies = [
        [{"tool": "bash", "args": {"command": "echo $$ > job.pid; exec sleep 3193", "background": True}}],
        [{"tool": "bash", "args": {"command": "while [ ! -s job.pid ]; do sleep 0.02; done"}}],
        [{"text": "JOB RUNS"}],
    ]
    script = chat.script("plain", replies)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env.update(CRAB_HOME=str(chat.home), CRAB_PLUGINS="provider-mock,tape-jsonl,tools-basic", NO_COLOR="1")
    command = [str(CRAB), "chat", "--store", "jsonl", "--yolo", "-m", f"mock/{script}"]
    process = subprocess.Popen(
        command, cwd=chat.project, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    pid = 0
    try:
        assert process.stdin is not None
        process.stdin.write(b"start it\n/new\n")
        process.stdin.flush()
        pid = pid_in(chat.project / "job.pid")
        until("the job to end with the session left", lambda: not alive(pid))
        assert process.poll() is None  # chat still reads its input: /new ended the job, not the exit
        out, err = process.communicate(timeout=WAIT)  # closing stdin ends chat
        assert process.returncode == 0, err.decode()
        assert b"JOB RUNS" in out
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)
    stored = chat.sessions()
    (old,) = [s for s, (_, entries) in stored.items() if entries]
    assert said(stored[old][1], "user") == ["start it"] and unpaired(stored[old][1]) == []
