"""Instruction files in the system prompt: the user's global AGENTS.md, then every folder from the
repository root down to the workspace (nearest last), CLAUDE.md where a folder has no AGENTS.md;
a malicious repository cannot make crab read outside it or hang on a FIFO; users and plugins
append after core's part, never in place of it."""

from __future__ import annotations

import os
import types
from pathlib import Path

import crab
import pytest
from crab._builtin.prompt import MAX_AGENTS_BYTES, base_prompt, instruction_files, repository_root


def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    work = repo / "a" / "b"
    work.mkdir(parents=True)
    home.mkdir()
    (repo / ".git").mkdir()
    return home, repo, work


def test_global_first_then_root_down_to_the_workspace_with_claude_md_as_fallback(tmp_path: Path) -> None:
    home, repo, work = tree(tmp_path)
    (home / "AGENTS.md").write_text("global rule")
    (repo / "AGENTS.md").write_text("root rule")
    (repo / "a" / "CLAUDE.md").write_text("middle rule (claude)")
    (work / "AGENTS.md").write_text("nearest rule")
    (work / "CLAUDE.md").write_text("never read: AGENTS.md wins in its folder")
    found = instruction_files(work, home)
    assert [text for _, text in found] == ["global rule", "root rule", "middle rule (claude)", "nearest rule"]
    assert [label for label, _ in found][1:] == ["AGENTS.md", "a/CLAUDE.md", "a/b/AGENTS.md"]


def test_without_a_repository_only_the_workspace_is_read(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    work = outer / "work"
    work.mkdir(parents=True)
    (outer / "AGENTS.md").write_text("from a folder above, not a repository")
    (work / "CLAUDE.md").write_text("workspace rule")
    assert repository_root(work) == work.resolve()
    assert [text for _, text in instruction_files(work, None)] == ["workspace rule"]


def test_a_git_file_marks_a_worktree_root(tmp_path: Path) -> None:
    repo = tmp_path / "wt"
    (repo / "sub").mkdir(parents=True)
    (repo / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")
    (repo / "AGENTS.md").write_text("worktree rule")
    assert [text for _, text in instruction_files(repo / "sub", None)] == ["worktree rule"]


def test_a_symlink_may_stay_inside_the_repository_but_not_leave_it(tmp_path: Path) -> None:
    home, repo, work = tree(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("aws_secret_access_key = outside")
    (repo / "docs.md").write_text("shared rules")
    (repo / "a" / "AGENTS.md").symlink_to(os.path.relpath(repo / "docs.md", repo / "a"))
    (work / "AGENTS.md").symlink_to(secret)
    (work / "CLAUDE.md").write_text("fallback after a refused link")
    texts = [text for _, text in instruction_files(work, home)]
    assert texts == ["shared rules", "fallback after a refused link"]


def test_the_global_file_is_the_users_own_and_may_link_anywhere(tmp_path: Path) -> None:
    home, _, work = tree(tmp_path)
    dotfiles = tmp_path / "dotfiles.md"
    dotfiles.write_text("my own rules")
    (home / "AGENTS.md").symlink_to(dotfiles)
    assert [text for _, text in instruction_files(work, home)] == ["my own rules"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_a_fifo_or_a_folder_in_place_of_a_file_is_skipped(tmp_path: Path) -> None:
    home, repo, work = tree(tmp_path)
    os.mkfifo(repo / "AGENTS.md")
    (repo / "CLAUDE.md").mkdir()
    (work / "AGENTS.md").write_text("still read")
    assert [text for _, text in instruction_files(work, home)] == ["still read"]


def test_each_file_is_cut_at_the_cap(tmp_path: Path) -> None:
    _, repo, work = tree(tmp_path)
    (repo / "AGENTS.md").write_text("x" * (MAX_AGENTS_BYTES * 3))
    [(_, text)] = instruction_files(work, None)
    assert len(text) == MAX_AGENTS_BYTES


def test_the_prompt_orders_core_plugins_user_append_and_instructions(crab_agent, crab_home: Path) -> None:
    (crab_home / "AGENTS.md").write_text("GLOBAL-RULE")
    Path("AGENTS.md").write_text("PROJECT-RULE")
    part = types.SimpleNamespace(crab_system_prompt=crab.hookimpl(lambda workspace, session_id, config: "PLUGIN-PART"))
    h = crab_agent([[{"text": "ok"}]], plugins={"p": part}, config={"crab.system_prompt_append": "USER-APPEND"})
    h.run("hi")
    system = h.requests[0].system
    assert system.startswith("You are crab")
    positions = [system.index(s) for s in ("# Tools", "GLOBAL-RULE", "PROJECT-RULE", "PLUGIN-PART", "USER-APPEND")]
    assert positions == sorted(positions)


def test_the_default_prompt_states_workspace_session_date_and_how_to_finish(tmp_path: Path) -> None:
    # The session's date, fixed for the session (today's would change the whole cached prefix of
    # a session continued the next day: a later date is a recorded note, crab._loop.steps.DATE_NOTE).
    text = base_prompt(tmp_path, date="2026-01-02")
    assert f"Workspace: {tmp_path}\nSession date (UTC): 2026-01-02\n" in text
    assert "<!--" not in text and "{" not in text
    assert "Session date" not in base_prompt(tmp_path)  # a session id not of crab's form: no date
    assert "ends your turn" in text


def test_a_workspace_path_with_braces_stays_as_it_is(tmp_path: Path) -> None:
    odd = tmp_path / "{date}{max_calls}"
    text = base_prompt(odd, date="2026-01-02", max_calls=3)
    assert f"Workspace: {odd}\n" in text and "A turn has 3 model calls" in text


def test_the_prompt_names_no_plugins_tool() -> None:
    # Core names no plugin, whatever tools are loaded.
    import re

    text = base_prompt(Path("/w"))
    assert set(re.findall(r"\$\w+", text)) == set()
    for tool in ("read", "write", "edit", "bash", "glob", "grep", "ls", "skill", "web_fetch"):
        assert f"`{tool}`" not in text and f"${tool}" not in text


def test_the_model_call_cap_the_prompt_states_is_the_loops(crab_agent) -> None:
    # The prompt says: N model calls, then crab asks for an answer and runs no more tools; the
    # last request keeps the session's tools and system prompt (its cached prefix), the request
    # for the answer is a recorded note.
    @crab.tool
    def probe() -> str:
        """Probe."""
        return "ok"

    plugin = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [probe]))
    calls = [[{"tool": "probe", "args": {}}]] * 3
    h = crab_agent([*calls, [{"text": "what I found"}]], plugins={"p": plugin}, config={"crab.max_iterations": 3})
    outcome = h.run("go")
    assert "A turn has 3 model calls; then crab asks for your answer and runs no more tools" in (h.requests[0].system)
    assert outcome.stop == "max_iterations" and outcome.text == "what I found"
    assert len(h.requests) == 4 and all(r.tools == h.requests[0].tools for r in h.requests)
    assert all(r.system == h.requests[0].system for r in h.requests)
    assert h.requests[3].messages[-1].content.startswith("[crab] You have reached the limit of tool calls")
