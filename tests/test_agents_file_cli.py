"""The instruction files (the user's, then the repository root's down to the workspace's AGENTS.md
or CLAUDE.md) go into the system prompt, but a cloned repository cannot make crab read outside
it (a symlink to the user's files) or hang crab (a symlink to a FIFO or an endless device),
through the real ``crab`` command and the openai plugin on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from crab.testing.http_replay import HttpReply, ReplayServer

ANSWER = [
    b'data: {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": '
    b'{"role": "assistant", "content": "ok"}, "finish_reason": null}]}\n\n',
    b'data: {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, '
    b'"finish_reason": "stop"}]}\n\n',
    b"data: [DONE]\n\n",
]


def _run(tmp_path: Path, work: Path) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    with ReplayServer() as server:
        server.script(HttpReply(events=ANSWER))
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        (home / "config.toml").write_text(f'[plugins.provider-openai]\nbase_url = "{server.url}"\n')
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
        env.update(CRAB_HOME=str(home), CRAB_PLUGINS="provider-openai")
        result = subprocess.run(
            [sys.executable, "-m", "crab", "run", "--provider", "openai", "--model", "m", "-o", "json", "hello"],
            cwd=work, env=env, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        return result, [r.body for r in server.requests]


def _system(bodies: list[Any]) -> str:
    assert bodies, "no request reached the server"
    return json.dumps(bodies[0]["messages"][0])


def test_agents_file_inside_the_workspace_is_used(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "CLAUDE.md").write_text("Use tabs, project rule 7.\n")
    (work / "AGENTS.md").symlink_to("CLAUDE.md")
    result, bodies = _run(tmp_path, work)
    assert result.returncode == 0, result.stderr
    assert "project rule 7" in _system(bodies)


def test_agents_file_symlinked_outside_the_workspace_is_not_read(tmp_path):
    private = tmp_path / "private.txt"
    private.write_text("aws_secret_access_key = outside-the-workspace\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "AGENTS.md").symlink_to(os.path.relpath(private, work))
    result, bodies = _run(tmp_path, work)
    assert result.returncode == 0, result.stderr
    assert "outside-the-workspace" not in _system(bodies)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_agents_file_that_is_a_fifo_does_not_hang_crab(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    os.mkfifo(work / "AGENTS.md")
    result, _ = _run(tmp_path, work)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["text"] == "ok"


def test_instruction_files_from_home_and_the_repository_root_down_in_order(tmp_path):
    repo = tmp_path / "repo"
    work = repo / "pkg"
    work.mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "AGENTS.md").write_text("root rule 1\n")
    (work / "CLAUDE.md").write_text("package rule 2\n")
    outside = tmp_path / "outside.md"
    outside.write_text("outside rule\n")
    (repo / "CLAUDE.md").symlink_to(outside)  # never read: AGENTS.md wins, and it leaves the repository
    home = tmp_path / "home"
    home.mkdir()
    (home / "AGENTS.md").write_text("global rule 0\n")
    result, bodies = _run(tmp_path, work)
    assert result.returncode == 0, result.stderr
    system = _system(bodies)
    assert system.index("global rule 0") < system.index("root rule 1") < system.index("package rule 2")
    assert "outside rule" not in system


def test_doctor_lists_the_instruction_files_in_prompt_order(tmp_path):
    # A user has no other way to see which AGENTS.md files the model reads from where they stand.
    home, repo = tmp_path / "home", tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg" / "sub").mkdir(parents=True)
    home.mkdir()
    (home / "AGENTS.md").write_text("mine\n")
    (repo / "AGENTS.md").write_text("root\n")
    (repo / "pkg" / "CLAUDE.md").write_text("pkg\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(home), CRAB_PLUGINS="")

    def doctor(cwd: Path) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-m", "crab", "doctor"], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
        )
        return [line for line in done.stdout.splitlines() if "instructions:" in line]

    assert doctor(repo / "pkg" / "sub") == [
        f"ok    instructions: {home / 'AGENTS.md'} (your global instructions), AGENTS.md, pkg/CLAUDE.md"
    ]
    (home / "AGENTS.md").unlink()
    (repo / "AGENTS.md").unlink()
    (repo / "pkg" / "CLAUDE.md").unlink()
    assert doctor(repo) == [
        "ok    instructions: no AGENTS.md or CLAUDE.md here, above (to the repository root) or in your crab folder"
    ]
