"""Claude Code's ``WorktreeCreate`` and ``WorktreeRemove`` (crab-hooks) on the worktrees crab-worktree
makes for crab-subagents' ``isolation: worktree`` agents, through the real ``crab run`` on the
scripted ``mock`` provider in a real git repository, with the hooks reference's own examples
(plugins/hooks/tests/hooks_reference_examples.py): a ``WorktreeCreate`` hook makes the folder
instead of git, and the reference's ``WorktreeRemove`` command removes it when the child ends;
without one, git makes the worktree and ``WorktreeRemove`` hears of each one removed."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CRAB = Path(sys.executable).with_name("crab")
PLUGINS = "provider-mock,tools-basic,subagents,worktree,hooks"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
EXAMPLES_FILE = Path(__file__).parents[1] / "plugins" / "hooks" / "tests" / "hooks_reference_examples.py"

pytestmark = pytest.mark.skipif(not CRAB.exists(), reason=f"no crab command next to {sys.executable}")


def examples() -> Any:
    spec = importlib.util.spec_from_file_location("hooks_reference_examples", EXAMPLES_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def command(config: str, event: str) -> str:
    return str(json.loads(config)["hooks"][event][0]["hooks"][0]["command"])


def run(tmp_path: Path, hooks: dict[str, list[str]]) -> tuple[Path, Path, list[dict[str, Any]]]:
    """``crab run`` in a fresh repository whose parent starts one ``isolation: worktree`` child
    that runs ``pwd``; ``hooks`` (event → commands) in the user's ``~/.claude/settings.json``."""
    repo, home = tmp_path / "repo", tmp_path / "home"
    repo.mkdir()
    (repo / "a.txt").write_text("one\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    (home / ".crab" / "agents").mkdir(parents=True)
    (home / ".claude").mkdir()
    settings = {event: [{"hooks": [{"type": "command", "command": c} for c in cs]}] for event, cs in hooks.items()}
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": settings}), encoding="utf-8")
    child = tmp_path / "child.json"
    child.write_text(
        json.dumps({"replies": [[{"tool": "bash", "id": "p1", "args": {"command": "pwd"}}], [{"text": "ok"}]]})
    )
    front = f"name: boxed\ndescription: works apart\nmodel: mock/{child}\nisolation: worktree"
    (home / ".crab" / "agents" / "boxed.md").write_text(f"---\n{front}\n---\nWork.\n", encoding="utf-8")
    parent = tmp_path / "parent.json"
    call = {"tool": "task", "id": "t1", "args": {"description": "apart", "prompt": "go", "agent": "boxed"}}
    parent.write_text(json.dumps({"replies": [[call], [{"text": "done"}]]}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(GIT_ENV, HOME=str(home), CRAB_HOME=str(home / ".crab"), CRAB_PLUGINS=PLUGINS, NO_COLOR="1")
    env["HOOK_LOG"] = str(tmp_path / "hooks.jsonl")
    done = subprocess.run(
        [str(CRAB), "run", "-m", f"mock/{parent}", "--yolo", "-o", "jsonl", "go"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return repo, home, [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


LOG = 'jq -c . >> "$HOOK_LOG"'
"""A second hook of the event: what crab sent it, one JSON line each."""


def logged(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "hooks.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_a_worktree_create_hook_makes_the_childs_folder_and_the_references_remove_hook_removes_it(
    tmp_path: Path,
) -> None:
    ref = examples()
    # the reference's WorktreeCreate command, its SVN checkout the one part replaced (no SVN here)
    create = command(ref.WORKTREE_CREATE_CONFIG, "WorktreeCreate").replace(
        "svn checkout https://svn.example.com/repo/trunk", "mkdir -p"
    )
    remove = command(ref.WORKTREE_REMOVE_CONFIG, "WorktreeRemove")  # unchanged: rm -rf the path
    repo, home, events = run(tmp_path, {"WorktreeCreate": [create, LOG], "WorktreeRemove": [remove, LOG]})
    made, gone = logged(tmp_path)
    assert set(json.loads(ref.WORKTREE_CREATE_INPUT)) <= set(made) and made["hook_event_name"] == "WorktreeCreate"
    assert set(json.loads(ref.WORKTREE_REMOVE_INPUT)) <= set(gone) and gone["hook_event_name"] == "WorktreeRemove"
    folder = home / ".claude" / "worktrees" / made["name"]
    assert made["name"].startswith("boxed-") and made["cwd"] == str(repo)
    assert gone["worktree_path"] == str(folder) and gone["session_id"] == made["session_id"] != ""
    pwd = next(e["event"]["content"] for e in events if e["type"] == "child" and e["event"]["type"] == "tool_result")
    assert pwd.splitlines()[0] == str(folder)  # the child worked in the hook's folder
    result = next(e["content"] for e in events if e["type"] == "tool_result" and e["call_id"] == "t1")
    assert f"[worktree {folder} (made by a WorktreeCreate hook) left to the WorktreeRemove hooks]" in result
    assert not folder.exists()  # the reference's remove hook removed it
    assert not (repo / ".crab" / "worktrees").exists()  # git made none
    assert "crab/" not in git(repo, "branch", "--list")


def test_without_a_create_hook_git_makes_it_and_remove_hooks_hear_of_its_removal(tmp_path: Path) -> None:
    repo, _home, events = run(tmp_path, {"WorktreeRemove": [LOG]})
    [gone] = logged(tmp_path)
    pwd = next(e["event"]["content"] for e in events if e["type"] == "child" and e["event"]["type"] == "tool_result")
    folder = Path(pwd.splitlines()[0])
    assert folder.parent == (repo / ".crab" / "worktrees").resolve() and not folder.exists()
    assert gone["hook_event_name"] == "WorktreeRemove" and Path(gone["worktree_path"]).resolve() == folder
    result = next(e["content"] for e in events if e["type"] == "tool_result" and e["call_id"] == "t1")
    assert f"[worktree {folder.name} removed: no changes]" in result


def test_a_failing_create_hook_fails_the_task_and_nothing_is_made(tmp_path: Path) -> None:
    repo, _home, events = run(tmp_path, {"WorktreeCreate": ["echo no svn here >&2; exit 1"]})
    result = next(e for e in events if e["type"] == "tool_result" and e["call_id"] == "t1")
    assert result["is_error"]
    assert "agent boxed needs a worktree of its own and none could be made: WorktreeCreate hook" in result["content"]
    assert "no svn here" in result["content"]
    assert not any(e["type"] == "child" for e in events) and not (repo / ".crab" / "worktrees").exists()


def test_leaving_an_unchanged_session_worktree_runs_worktree_remove(tmp_path: Path) -> None:
    repo, home, _events = run(tmp_path, {"WorktreeRemove": [LOG]})
    (tmp_path / "hooks.jsonl").unlink()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(GIT_ENV, HOME=str(home), CRAB_HOME=str(home / ".crab"), CRAB_PLUGINS=PLUGINS, NO_COLOR="1")
    env["HOOK_LOG"] = str(tmp_path / "hooks.jsonl")
    script = tmp_path / "plain.json"
    script.write_text(json.dumps({"replies": [[{"text": "nothing to do"}]]}), encoding="utf-8")
    done = subprocess.run(
        [str(CRAB), "run", "-m", f"mock/{script}", "--worktree=plain", "hi"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [gone] = logged(tmp_path)
    assert gone["hook_event_name"] == "WorktreeRemove" and gone["session_id"] == ""
    assert gone["worktree_path"] == str(repo / ".crab" / "worktrees" / "plain")
    assert not (repo / ".crab" / "worktrees" / "plain").exists()
