"""``/worktrees`` and leaving, in-process (crab.testing's harness on a real git repository): the
run's own worktree is listed as this session's, a worktree another run kept is listed with its
uncommitted files, and closing the agent removes the unchanged one."""

from __future__ import annotations

from pathlib import Path

import crab

from crab_worktree import WorktreePlugin


def test_slash_worktrees_lists_crabs_worktrees_and_closing_removes_the_unchanged_one(repo: Path, crab_agent, git_in):
    git_in(repo, "worktree", "add", "-q", "-b", "crab/other", str(repo / ".crab" / "worktrees" / "other"))
    (repo / ".crab" / "worktrees" / "other" / "wip.txt").write_text("work in progress\n")
    git_in(repo, "worktree", "add", "-q", "-b", "feature", str(repo.parent / "feature"))  # not crab's: not listed
    h = crab_agent(
        [],
        plugins={"worktree": WorktreePlugin()},
        config={"plugins.worktree.enabled": True, "plugins.worktree.name": "mine"},
        workspace=repo,
    )
    mine = repo / ".crab" / "worktrees" / "mine"
    assert h.agent.workspace == mine
    h.run("/worktrees")
    [shown] = h.events_of(crab.events.CommandOutput)
    lines = shown.text.splitlines()
    assert lines[0] == "crab worktrees (2):"
    assert f"  crab/other  {repo / '.crab' / 'worktrees' / 'other'}  1 uncommitted" in lines
    assert f"  crab/mine  {mine}  clean (this session)" in lines
    h.run_async(h.agent.close())
    assert not mine.exists() and "crab/mine" not in git_in(repo, "branch")
    assert (repo / ".crab" / "worktrees" / "other" / "wip.txt").exists()  # another run's work is left alone
