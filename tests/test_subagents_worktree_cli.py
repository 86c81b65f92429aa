"""Subagents with ``isolation: worktree`` through the real ``crab run`` on the scripted ``mock``
provider in a real git repository: each child works in a git worktree of its own (crab-worktree,
offered through crab-subagents' ``crab_child_workspaces``); an unchanged one is removed when the
child ends, a changed one is kept and named in the child's result (branch, folder, diff summary),
and the user's checkout is never touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CRAB = Path(sys.executable).with_name("crab")
PLUGINS = "provider-mock,tools-basic,subagents,worktree"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}

pytestmark = pytest.mark.skipif(not CRAB.exists(), reason=f"no crab command next to {sys.executable}")


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def task(call_id: str, agent: str) -> dict[str, Any]:
    return {"tool": "task", "id": call_id, "args": {"description": f"{agent} works", "prompt": "go", "agent": agent}}


def run(tmp_path: Path, repo: Path, agents: dict[str, list[Any]], parent: list[Any]) -> list[dict[str, Any]]:
    home = tmp_path / "home"
    (home / "agents").mkdir(parents=True, exist_ok=True)
    for name, replies in agents.items():
        script = tmp_path / f"{name}.json"
        script.write_text(json.dumps({"replies": replies}), encoding="utf-8")
        front = f"name: {name}\ndescription: the {name} agent\nmodel: mock/{script}\nisolation: worktree"
        (home / "agents" / f"{name}.md").write_text(f"---\n{front}\n---\nYou are {name}.\n", encoding="utf-8")
    script = tmp_path / "parent.json"
    script.write_text(json.dumps({"replies": parent}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(GIT_ENV, CRAB_HOME=str(home), CRAB_PLUGINS=PLUGINS, NO_COLOR="1")
    done = subprocess.run(
        [str(CRAB), "run", "-m", f"mock/{script}", "--yolo", "-o", "jsonl", "both of you, go"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_each_isolated_child_works_in_its_own_worktree_kept_only_when_changed(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("one\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    writer = [
        [{"tool": "bash", "id": "w1", "args": {"command": "printf 'two\\nthree\\n' > a.txt"}}],
        [{"tool": "bash", "id": "w2", "args": {"command": "pwd"}}],
        [{"text": "changed a.txt"}],
    ]
    reader = [[{"tool": "bash", "id": "r1", "args": {"command": "pwd"}}], [{"text": "looked around"}]]
    parent = [[task("t1", "writer"), task("t2", "reader")], [{"text": "both done"}]]
    events = run(tmp_path, repo, {"writer": writer, "reader": reader}, parent)

    results = {e["call_id"]: e for e in events if e["type"] == "tool_result"}
    kept, removed = results["t1"]["content"], results["t2"]["content"]
    # the writer's worktree holds its change: kept, named with its branch, folder and diff summary
    assert "[worktree kept: " in kept and "on branch crab/writer-" in kept, kept
    assert "1 file changed, 2 insertions(+), 1 deletion(-)" in kept, kept
    folder = Path(kept.split("[worktree kept: ", 1)[1].split(" on branch ", 1)[0])
    branch = kept.split(" on branch ", 1)[1].split(" ", 1)[0]
    assert folder.parent == repo / ".crab" / "worktrees" and folder.name.startswith("writer-")
    assert (folder / "a.txt").read_text() == "two\nthree\n"
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert branch in git(repo, "branch", "--list", "crab/*")
    # the reader changed nothing: its worktree and its branch are gone
    assert "[worktree reader-" in removed and " removed: no changes]" in removed, removed
    reader_tree = removed.split("[worktree ", 1)[1].split(" removed", 1)[0]
    assert not (repo / ".crab" / "worktrees" / reader_tree).exists()
    assert f"crab/{reader_tree}" not in git(repo, "branch", "--list", "crab/*")
    # each child's tools ran in its own worktree; the user's checkout is untouched
    shells = {
        e["label"]: e["event"]["content"].splitlines()[0]
        for e in events
        if e["type"] == "child" and e["event"]["type"] == "tool_result" and e["event"]["call_id"] in ("w2", "r1")
    }
    assert Path(shells["writer"]) == folder.resolve()
    assert Path(shells["reader"]).parent == (repo / ".crab" / "worktrees").resolve()
    assert (repo / "a.txt").read_text() == "one\n"
    assert git(repo, "status", "--porcelain") == ""
    assert events[-1]["type"] == "turn_end" and events[-1]["text"] == "both done"
