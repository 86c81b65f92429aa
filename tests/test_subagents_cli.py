"""Subagents driven as a user would: the real ``crab`` command, the scripted ``mock`` provider (each
agent file names its own script as its model), a real store; ``crab sessions show`` prints the
tree, ``-o jsonl`` carries the children's events, and a tree killed with -9 is whole on resume."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from crab._contracts.storage import Entry
from crab_tape_jsonl import TapeStore

CRAB = Path(sys.executable).with_name("crab")
PLUGINS = "provider-mock,tape-jsonl,subagents"

pytestmark = [
    pytest.mark.filterwarnings("ignore::crab_tape_jsonl.TornLineWarning"),
    pytest.mark.skipif(not CRAB.exists(), reason=f"no crab command next to {sys.executable}"),
]


def usage(n: int) -> dict[str, Any]:
    return {"usage": {"input_tokens": n, "output_tokens": n // 10}}


def task(call_id: str, agent: str, prompt: str) -> dict[str, Any]:
    return {"tool": "task", "id": call_id, "args": {"description": prompt, "prompt": prompt, "agent": agent}}


@dataclass
class Crab:
    home: Path
    project: Path

    def script(self, name: str, replies: list[Any], loop: bool = False) -> Path:
        path = self.home.parent / f"{name}.json"
        path.write_text(json.dumps({"replies": replies, "loop": loop}), encoding="utf-8")
        return path

    def agent(self, name: str, script: Path, extra: str = "") -> None:
        folder = self.home / "agents"
        folder.mkdir(parents=True, exist_ok=True)
        front = f"name: {name}\ndescription: the {name} agent\nmodel: mock/{script}\n{extra}"
        (folder / f"{name}.md").write_text(f"---\n{front.strip()}\n---\nYou are {name}.\n", encoding="utf-8")

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
        return {**env, "CRAB_HOME": str(self.home), "CRAB_PLUGINS": PLUGINS, "NO_COLOR": "1"}

    def args(self, script: Path, prompt: str, *extra: str) -> list[str]:
        return [str(CRAB), "run", "--store", "jsonl", "-m", f"mock/{script}", "--yolo", *extra, prompt]

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(CRAB), *args], cwd=self.project, env=self.env(), capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f"crab {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return done

    def run(self, script: Path, prompt: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return self(*self.args(script, prompt, *extra)[1:])

    def sessions(self) -> dict[str, tuple[dict[str, Any], list[Entry]]]:
        async def go() -> dict[str, tuple[dict[str, Any], list[Entry]]]:
            store = TapeStore(self.home / "sessions")
            await store.open()
            try:
                return {
                    info.id: (dict(info.meta), await store.entries(info.id))
                    for info in await store.list_sessions(None, limit=1000)
                }
            finally:
                await store.close()

        return asyncio.run(go())


@pytest.fixture
def crab(tmp_path: Path) -> Crab:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "home").mkdir()
    return Crab(home=tmp_path / "home", project=project)


def unpaired(entries: list[Entry]) -> list[str]:
    calls = [str(c["id"]) for e in entries if e.type == "message" for c in e.payload.get("tool_calls", ()) or ()]
    results = [str(e.payload.get("call_id")) for e in entries if e.type == "tool_result"]
    problems = [f"call {c}: {results.count(c)} results" for c in calls if results.count(c) != 1]
    return problems + [f"result {r} without its call" for r in results if r not in calls]


def test_two_agents_run_under_crab_run_and_sessions_show_prints_the_tree(crab: Crab) -> None:
    crab.agent("alpha", crab.script("alpha", [[{"delay": 0.2}, {"text": "alpha found A"}, usage(40)]]))
    crab.agent("beta", crab.script("beta", [[{"text": "beta found B"}, usage(50)]]))
    parent = crab.script(
        "parent",
        [
            [task("t1", "alpha", "find A"), task("t2", "beta", "find B"), usage(100)],
            [{"text": "A and B found"}, usage(200)],
        ],
    )
    done = crab.run(parent, "find both", "-o", "jsonl")
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    child_events = [e for e in events if e["type"] == "child"]
    labels = {e["label"] for e in child_events}
    assert labels == {"alpha", "beta"}
    by_label = {e["label"]: e["session_id"] for e in child_events}
    texts = {e["label"]: e["event"]["text"] for e in child_events if e["event"]["type"] == "text_delta"}
    assert texts == {"alpha": "alpha found A", "beta": "beta found B"}
    end = events[-1]
    assert end["type"] == "turn_end" and end["text"] == "A and B found"
    assert end["usage"]["input_tokens"] == 100 + 200 + 40 + 50  # the children's usage rolls up
    results = {e["call_id"]: e["content"] for e in events if e["type"] == "tool_result"}
    assert results["t1"].startswith("alpha found A\n\n[task: agent alpha · session " + by_label["alpha"])

    parent_id = end["session_id"]
    shown = crab("sessions", "show", parent_id, "--store", "jsonl").stdout
    tree = shown.split("child sessions (2):\n", 1)[1].splitlines()
    assert sorted(line.split()[1:5] for line in tree) == sorted(
        [[by_label["alpha"], "alpha", "call", "t1"], [by_label["beta"], "beta", "call", "t2"]]
    )
    document = json.loads(crab("sessions", "show", parent_id, "--store", "jsonl", "--json").stdout)
    assert {c["id"]: c["label"] for c in document["children"]} == {v: k for k, v in by_label.items()}
    child_shown = crab("sessions", "show", by_label["beta"], "--store", "jsonl").stdout
    assert f"child of {parent_id} (call t2)" in child_shown
    # `crab run -c` continues the parent, not the child that was written to last but one.
    again = crab.script("again", [[{"text": "continued"}]])
    crab.run(again, "more", "-c")
    stored = crab.sessions()
    said = [e.payload.get("content") for e in stored[parent_id][1] if e.type == "message"]
    assert said[-1] == "continued"


def test_a_subagent_tree_killed_with_9_and_resumed_keeps_every_call_paired(crab: Crab) -> None:
    # The child keeps calling a tool that does not exist (an instant error result) and a slow
    # turn of its own: at any moment some call of the child or grandchild may be open.
    child_steps = [
        [{"text": f"step {n} "}, {"delay": 0.05}, {"tool": "nothing_here", "id": f"c{n}", "args": {"n": n}}, usage(n)]
        for n in range(200)
    ]
    grand = crab.script("grand", child_steps, loop=True)
    crab.agent("grand", grand)
    child = crab.script("child", [[task("g1", "grand", "go deeper"), usage(1)], *child_steps], loop=True)
    crab.agent("child", child)
    parent = crab.script("parent", [[task("t1", "child", "work"), task("t2", "grand", "work too"), usage(9)]])
    process = subprocess.Popen(
        crab.args(parent, "start the tree"),
        cwd=crab.project,
        env=crab.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            stored = crab.sessions() if (crab.home / "sessions").exists() else {}
            grandchildren = [s for s, (meta, _) in stored.items() if meta.get("crab.child_label") == "grand"]
            if len(grandchildren) >= 2 and all(len(stored[g][1]) > 6 for g in grandchildren):
                break
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            time.sleep(0.1)
        else:
            pytest.fail("the tree never grew")
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    stored = crab.sessions()
    assert len(stored) == 4  # parent, child, two grandchildren (one under the child, one under the parent)
    # The parent's task calls and the child's own task call are open: their children still ran.
    (child_id,) = [s for s, (meta, _) in stored.items() if meta.get("crab.child_label") == "child"]
    assert unpaired(stored[child_id][1]) == ["call g1: 0 results"]
    (parent_id,) = [s for s, (meta, _) in stored.items() if not meta.get("crab.parent_session")]

    crab.run(crab.script("resume", [[{"text": "resumed"}]]), "carry on", "--session", parent_id)
    after = crab.sessions()
    assert set(after) == set(stored)
    for session_id, (_, entries) in after.items():
        before = stored[session_id][1]
        assert [e.id for e in entries[: len(before)]] == [e.id for e in before], "entries were lost or changed"
        assert unpaired(entries) == [], session_id


# Red team (issue 40, second pass): SIGTERM and SIGINT to ``crab run`` while a subagent tree runs:
# the run ends with its signal's code and every call of every session of the tree has exactly one
# stored result at once, with no resume needed (a ``kill -9`` is what ``crab run -c`` repairs).
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_subagent_tree_stopped_by_a_signal_leaves_every_call_paired(crab: Crab, signum: int, code: int) -> None:
    child_steps = [
        [{"text": f"step {n} "}, {"delay": 0.05}, {"tool": "nothing_here", "id": f"c{n}", "args": {"n": n}}, usage(n)]
        for n in range(200)
    ]
    grand = crab.script("grand", child_steps, loop=True)
    crab.agent("grand", grand)
    child = crab.script("child", [[task("g1", "grand", "go deeper"), usage(1)], *child_steps], loop=True)
    crab.agent("child", child)
    parent = crab.script("parent", [[task("t1", "child", "work"), task("t2", "grand", "work too"), usage(9)]])
    process = subprocess.Popen(
        crab.args(parent, "start the tree"),
        cwd=crab.project,
        env=crab.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            stored = crab.sessions() if (crab.home / "sessions").exists() else {}
            grandchildren = [s for s, (meta, _) in stored.items() if meta.get("crab.child_label") == "grand"]
            if len(grandchildren) >= 2 and all(len(stored[g][1]) > 6 for g in grandchildren):
                break
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            time.sleep(0.1)
        else:
            pytest.fail("the tree never grew")
        process.send_signal(signum)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    assert process.returncode == code, err.decode()
    assert b"Traceback" not in err, err.decode()
    stored = crab.sessions()
    assert len(stored) == 4
    for session_id, (meta, entries) in stored.items():
        assert unpaired(entries) == [], (meta.get("crab.child_label"), session_id)
