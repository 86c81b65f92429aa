"""Background shells in a real agent and through the real ``crab run``: /jobs lists them, and no
job outlives its agent or crab (checked in /proc)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import crab
import crab_tools_basic
import pytest
from crab.messages import ToolResultMessage
from crab.testing import AgentHarness, ScriptedSite
from crab.testing import process_alive as alive

WAIT = 60.0


def wait_for_pid(path: Path, within: float = WAIT) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        text = path.read_text().strip() if path.exists() else ""
        if text.isdigit():
            return int(text)
        time.sleep(0.02)
    raise AssertionError(f"{path} never got a pid")


def test_slash_jobs_lists_the_sessions_jobs_and_closing_the_agent_ends_them(crab_home: Path) -> None:
    workspace = Path.cwd()
    h = AgentHarness(
        [
            [{"tool": "bash", "args": {"command": "echo $$ > job.pid; exec sleep 3180", "background": True}}],
            [{"tool": "bash", "args": {"command": "while [ ! -s job.pid ]; do sleep 0.02; done"}}],
            [{"tool": "bash_output", "args": {"job_id": "job-1"}}],
            [{"text": "started"}],
        ],
        plugins={"tools-basic": crab_tools_basic},
        config={"crab.permissions": "yolo", "plugins.tools-basic.output_dir": str(crab_home / "logs")},
        workspace=workspace,
    )
    try:
        assert h.run("start the server").text == "started"
        results = [m for m in h.requests[-1].messages if isinstance(m, ToolResultMessage)]
        assert "started job-1 in the background" in results[0].content
        assert "[job-1 is running (" in results[2].content and not results[2].is_error
        pid = wait_for_pid(workspace / "job.pid")
        assert alive(pid)  # the turn is over, the job is not

        listed = h.run("/jobs").text.splitlines()
        assert listed[0].split() == ["id", "state", "runtime", "exit", "command"]
        assert listed[1].split()[:2] == ["job-1", "running"]
        assert listed[1].endswith("echo $$ > job.pid; exec sleep 3180")

    finally:
        h.close()  # crab_shutdown: the agent's jobs end with it
    assert not alive(pid)


@pytest.mark.parametrize("command", ["/new", "/clear"])
def test_leaving_a_session_ends_its_jobs_and_keeps_its_entries(crab_home: Path, command: str) -> None:
    workspace = Path.cwd()
    h = AgentHarness(
        [
            [{"tool": "bash", "args": {"command": "echo $$ > job.pid; exec sleep 3186", "background": True}}],
            [{"tool": "bash", "args": {"command": "while [ ! -s job.pid ]; do sleep 0.02; done"}}],
            [{"text": "started"}],
        ],
        plugins={"tools-basic": crab_tools_basic},
        config={"crab.permissions": "yolo", "plugins.tools-basic.output_dir": str(crab_home / "logs")},
        workspace=workspace,
    )
    pid = 0
    try:
        assert h.run("start the server").text == "started"
        pid = wait_for_pid(workspace / "job.pid")
        old = h.session.id
        before = h.run_async(h.store.entries(old))
        outcome = h.run(command)
        assert outcome.switch_session and outcome.switch_session != old
        assert alive(pid)  # the command only names the new session: the channel moves to it
        h.session = h.run_async(h.agent.switch(h.session, outcome.switch_session))  # as crab chat does
        assert not alive(pid)  # ended before switch returned, not at some later exit
        after = h.run_async(h.store.entries(old))
        assert [(e.type, e.payload) for e in after] == [(e.type, e.payload) for e in before]
        assert any(e.payload.get("content") == "start the server" for e in after)
        assert h.run("/jobs").text == "no background jobs in this session"
    finally:
        h.close()
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)


class Delegate:
    """A tool that hands its work to a child session (as crab-subagents' ``task`` does)."""

    @crab.hookimpl
    def crab_tools(self) -> list[crab.Tool]:
        @crab.tool
        async def delegate(ctx: crab.ToolContext) -> str:
            """Ask a child."""
            return (await ctx.handle.run_child(ctx, "start the server", label="helper")).text

        return [delegate]


def test_a_child_sessions_jobs_end_with_its_answer(crab_home: Path) -> None:
    """No other session can read or end a child's job: it must not run on after the child answered."""
    workspace = Path.cwd()
    h = AgentHarness(
        [
            [{"tool": "delegate", "args": {}}],
            [{"tool": "bash", "args": {"command": "echo $$ > child.pid; exec sleep 3187", "background": True}}],
            [{"tool": "bash", "args": {"command": "while [ ! -s child.pid ]; do sleep 0.02; done"}}],
            [{"text": "the server ran"}],
            [{"text": "delegated"}],
        ],
        plugins={"tools-basic": crab_tools_basic, "delegate": Delegate()},
        config={"crab.permissions": "yolo", "plugins.tools-basic.output_dir": str(crab_home / "logs")},
        workspace=workspace,
    )
    pid = 0
    try:
        assert h.run("go").text == "delegated"
        pid = wait_for_pid(workspace / "child.pid")
        assert not alive(pid)  # ended when the child's turn did, while the parent's agent runs on
    finally:
        h.close()
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_slash_jobs_without_jobs(crab_agent: Callable[..., Any]) -> None:
    h = crab_agent([], plugins={"tools-basic": crab_tools_basic})
    assert h.run("/jobs").text == "no background jobs in this session"


class Run:
    """``crab run --yolo -o json`` with a scripted model (crab.testing's ``ScriptedSite``, provider
    ``scripted``), tools-basic and nothing else."""

    def __init__(self, root: Path) -> None:
        self.work = root / "work"
        self.work.mkdir()
        home = root / "home"
        (home / ".crab").mkdir(parents=True)
        self.site = ScriptedSite(root, provider="scripted", models=("scripted",))
        self.env = {
            k: v
            for k, v in self.site.env("scripted,tools-basic", home=home / ".crab").items()
            if not k.endswith("_API_KEY")
        }
        self.env.update(
            PYTHONPATH=os.pathsep.join(filter(None, [str(self.site.path), os.environ.get("PYTHONPATH")])),
            HOME=str(home),
            NO_COLOR="1",
        )

    def argv(self, replies: list[list[dict[str, Any]]]) -> list[str]:
        self.site.script(replies, loop=True)
        return [sys.executable, "-m", "crab", "run", "--yolo", "-o", "json", "-m", "scripted/scripted", "go"]


def test_crab_run_exits_and_leaves_no_job_behind(tmp_path: Path) -> None:
    run = Run(tmp_path)
    replies = [
        [{"tool": "bash", "args": {"command": "echo $$ > job.pid; exec sleep 3181", "background": True}}],
        [{"tool": "bash", "args": {"command": "while [ ! -s job.pid ]; do sleep 0.02; done; kill -0 $(cat job.pid)"}}],
        [{"tool": "bash_output", "args": {"job_id": "job-1"}}],
        [{"text": "done"}],
    ]
    done = subprocess.run(
        run.argv(replies), env=run.env, cwd=run.work, capture_output=True, text=True, timeout=WAIT * 2
    )
    assert done.returncode == 0, done.stderr
    calls = json.loads(done.stdout)["tool_calls"]
    assert [c["name"] for c in calls] == ["bash", "bash", "bash_output"]
    assert "started job-1 in the background" in calls[0]["result"]
    assert calls[1]["result"] == "(no output)\n[exit code 0]"  # the job ran after its call ended
    assert "[job-1 is running (" in calls[2]["result"]
    assert not alive(int((run.work / "job.pid").read_text()))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_crab_run_ends_its_jobs(tmp_path: Path, signum: signal.Signals) -> None:
    run = Run(tmp_path)
    replies = [
        [{"tool": "bash", "args": {"command": "setsid sleep 3182 & echo $! > job.pid; wait", "background": True}}],
        [{"tool": "bash", "args": {"command": "touch turn.started; exec sleep 3183"}}],
        [{"text": "never"}],
    ]
    process = subprocess.Popen(
        run.argv(replies), env=run.env, cwd=run.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        pid = wait_for_pid(run.work / "job.pid")
        deadline = time.monotonic() + WAIT
        while not (run.work / "turn.started").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert alive(pid)
        process.send_signal(signum)
        process.communicate(timeout=WAIT)
        assert process.returncode == 128 + signum
        # crab's last act is a SIGKILL to what its SIGTERM left; on a loaded machine the job may
        # take a moment after crab's exit to be scheduled and die.
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_a_job_does_not_outlive_crab_killed_with_sigkill(tmp_path: Path) -> None:
    """SIGKILL runs none of crab's exit paths: crab.processes' group watcher still ends the job's group."""
    run = Run(tmp_path)
    replies = [
        [{"tool": "bash", "args": {"command": "sleep 3184 & echo $! > job.pid; wait", "background": True}}],
        [{"tool": "bash", "args": {"command": "echo $$ > turn.started; exec sleep 3185"}}],
        [{"text": "never"}],
    ]
    process = subprocess.Popen(
        run.argv(replies), env=run.env, cwd=run.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    pid = 0
    started = run.work / "turn.started"
    try:
        pid = wait_for_pid(run.work / "job.pid")
        deadline = time.monotonic() + WAIT
        while not (started.exists() and started.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert alive(pid)
        process.kill()
        process.communicate(timeout=WAIT)
        deadline = time.monotonic() + WAIT
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        # Should the watcher fail, nothing this test started may outlive it.
        foreground = started.read_text().strip() if started.exists() else ""
        for left in (pid, int(foreground) if foreground.isdigit() else 0):
            if left and alive(left):
                os.kill(left, signal.SIGKILL)
