"""Red team (issue 40, second pass): SIGTERM and SIGINT to ``crab run`` while a subagent tree runs
(the real ``crab`` command, the scripted ``mock`` provider, the jsonl store): the run ends with
its signal's code and every call of every session of the tree has exactly one stored result at
once, with no resume needed (a ``kill -9`` is what ``crab run -c`` repairs)."""

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
