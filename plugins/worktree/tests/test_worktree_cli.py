"""crab-worktree through the real ``crab`` command on real git repositories: ``--worktree`` works in
a fresh worktree on its own branch; leaving removes one with no change and keeps (and names) one
with changes, never deleting uncommitted work; bad setups are one line and exit 2, never a run in
the checkout."""

from __future__ import annotations

import sys
from pathlib import Path

WRITE = [{"tool": "write_note", "args": {"name": "note.txt", "text": "hi"}}]
DONE = [{"text": "done"}]


def crab_worktrees(git, repo: Path) -> list[str]:
    return [line for line in git(repo, "worktree", "list").splitlines() if "[crab/" in line]


def test_a_run_with_changes_works_in_its_worktree_and_keeps_it_named(repo: Path, crab_in, git_in):
    done = crab_in(
        repo, [WRITE, DONE], "run", "--provider", "fake", "-m", "script", "--yolo", "--worktree=fix", "note it"
    )
    assert done.returncode == 0, done.stderr
    git = git_in
    tree = repo / ".crab" / "worktrees" / "fix"
    assert (tree / "note.txt").read_text() == "hi" and not (repo / "note.txt").exists()
    assert git(tree, "rev-parse", "--abbrev-ref", "HEAD").strip() == "crab/fix"
    [kept] = [line for line in done.stderr.splitlines() if "worktree kept" in line]
    assert f"{tree} on branch crab/fix (1 untracked file)" in kept and "git merge crab/fix" in kept
    assert len(crab_worktrees(git, repo)) == 1
    assert git(repo, "status", "--porcelain") == ""  # the checkout does not see the worktrees' folder


def test_a_run_without_changes_removes_its_worktree_and_branch(repo: Path, crab_in, git_in):
    done = crab_in(repo, [DONE], "run", "--provider", "fake", "-m", "script", "-w", "just look")
    assert done.returncode == 0, done.stderr
    assert "working in worktree" in done.stderr and "removed: no changes" in done.stderr
    git = git_in
    assert crab_worktrees(git, repo) == [] and git(repo, "branch", "--list", "crab/*") == ""
    assert list((repo / ".crab" / "worktrees").iterdir()) == [repo / ".crab" / "worktrees" / ".gitignore"]


def test_uncommitted_work_in_a_tracked_file_is_kept_never_deleted(repo: Path, crab_in, git_in):
    edit = [{"tool": "write_note", "args": {"name": "README.md", "text": "changed\n"}}]
    done = crab_in(repo, [edit, DONE], "run", "--provider", "fake", "-m", "script", "--yolo", "--worktree=edit", "go")
    assert done.returncode == 0, done.stderr
    tree = repo / ".crab" / "worktrees" / "edit"
    assert (tree / "README.md").read_text() == "changed\n" and (repo / "README.md").read_text() == "hello\n"
    assert "1 file changed, 1 insertion(+), 1 deletion(-), 1 uncommitted" in done.stderr


def test_work_in_an_ignored_file_is_kept_never_deleted(repo: Path, crab_in, git_in):
    """``git worktree remove`` deletes ignored files without a word (a ``.env``, a data folder):
    a worktree holding one is kept and says so, like one with untracked files."""
    (repo / ".gitignore").write_text(".env\n")
    git_in(repo, "add", ".gitignore")
    git_in(repo, "commit", "-q", "-m", "ignore .env")
    env = [{"tool": "write_note", "args": {"name": ".env", "text": "TOKEN=made by hand\n"}}]
    done = crab_in(repo, [env, DONE], "run", "--provider", "fake", "-m", "script", "--yolo", "--worktree=env", "go")
    assert done.returncode == 0, done.stderr
    tree = repo / ".crab" / "worktrees" / "env"
    assert (tree / ".env").read_text() == "TOKEN=made by hand\n"
    assert "worktree kept" in done.stderr and "1 ignored file or folder" in done.stderr


def test_a_run_started_in_a_sub_folder_works_in_the_same_sub_folder(repo: Path, crab_in, git_in):
    done = crab_in(repo / "src", [WRITE, DONE], "run", "--provider", "fake", "-m", "script", "--yolo", "-w", "go")
    assert done.returncode == 0, done.stderr
    [tree] = [p for p in (repo / ".crab" / "worktrees").iterdir() if p.is_dir()]
    assert (tree / "src" / "note.txt").read_text() == "hi"


def test_the_setting_puts_every_run_in_a_worktree(repo: Path, crab_in, git_in):
    args = ["run", "--provider", "fake", "-m", "script", "--yolo", "--set", "plugins.worktree.enabled=true"]
    done = crab_in(repo, [WRITE, DONE], *args, "--set", "plugins.worktree.name=always", "go")
    assert done.returncode == 0, done.stderr
    assert (repo / ".crab" / "worktrees" / "always" / "note.txt").exists()


def test_bad_setups_are_one_line_and_never_a_run_in_the_checkout(tmp_path: Path, repo: Path, crab_in, git_in):
    plain = tmp_path / "plain"
    plain.mkdir()
    cases = [
        (plain, "fake,worktree,notes", "-w", "is not in one"),
        (repo, "fake,worktree,notes", "--worktree=bad/name", "a name is letters"),
        (repo, "fake,notes", "-w", "no loaded plugin gives a separate workspace"),
    ]
    for cwd, plugins, flag, said in cases:
        done = crab_in(
            cwd, [WRITE, DONE], "run", "--provider", "fake", "-m", "script", "--yolo", flag, "go", plugins=plugins
        )
        assert done.returncode == 2, (flag, done.stderr)
        assert said in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (plain / "note.txt").exists() and not (repo / "note.txt").exists()
    git_in(repo, "branch", "crab/taken")  # a branch of that name, not a worktree crab kept
    taken = crab_in(
        repo, [WRITE, DONE], "run", "--provider", "fake", "-m", "script", "--yolo", "--worktree=taken", "go"
    )
    assert taken.returncode == 2 and "the branch crab/taken exists already" in taken.stderr


def test_a_repositorys_symlink_never_puts_worktrees_outside_it(tmp_path: Path, repo: Path, crab_in, git_in):
    """``.crab/worktrees`` committed as a symlink to a folder elsewhere: crab refuses in one line
    rather than write its ``.gitignore`` and a checkout there (only your own ``folder`` setting
    puts worktrees outside the repository)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / ".crab").mkdir()
    (repo / ".crab" / "worktrees").symlink_to(outside)
    git_in(repo, "add", "-A")
    git_in(repo, "commit", "-q", "-m", "a link")
    done = crab_in(repo, [WRITE, DONE], "run", "--provider", "fake", "-m", "script", "--yolo", "-w", "go")
    assert done.returncode == 2, done.stderr
    assert "outside the repository" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert list(outside.iterdir()) == [] and not (repo / "note.txt").exists()


def test_the_setting_that_fails_to_make_a_worktree_is_never_a_run_in_the_checkout(repo: Path, crab_in):
    """``enabled = true`` is the user's word that every run works in a worktree: when git cannot
    make one (here a branch prefix git refuses) the run stops with that line, as ``-w`` does."""
    args = ["run", "--provider", "fake", "-m", "script", "--yolo", "--set", "plugins.worktree.enabled=true"]
    done = crab_in(repo, [WRITE, DONE], *args, "--set", "plugins.worktree.branch_prefix=bad..name/", "go")
    assert done.returncode == 2, done.stderr
    assert "is not a valid branch name" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (repo / "note.txt").exists()


def test_crab_chat_in_a_named_worktree_lists_it_and_keeps_it_with_changes(
    repo: Path, crab_site, crab_screen, git_in, notes_source, git_env
):
    crab_site.add_plugin("notes", "crab_worktree_test_notes", notes_source)
    crab_site.script([WRITE, DONE])
    env = {**crab_site.env("fake,worktree,notes"), **git_env}
    command = [sys.executable, "-m", "crab", "chat", "--provider", "fake", "-m", "script", "--yolo", "-w", "feat"]
    screen = crab_screen(command, cwd=repo, env=env, ready="crab>")
    screen.type("/worktrees")
    screen.keys("Enter")
    tree = repo / ".crab" / "worktrees" / "feat"
    screen.wait_for("(this session)")
    screen.type("note it")
    screen.keys("Enter")
    screen.wait_for("done")
    screen.keys("C-d")
    screen.wait_for("worktree kept:")
    assert (tree / "note.txt").read_text() == "hi"
    assert "crab/feat" in git_in(repo, "branch", "--list", "crab/*")


def test_a_kept_worktree_is_entered_again_by_its_name_and_never_removed(repo: Path, crab_in, git_in):
    first = crab_in(
        repo, [WRITE, DONE], "run", "--provider", "fake", "-m", "script", "--yolo", "--worktree=again", "go"
    )
    assert first.returncode == 0 and "worktree kept" in first.stderr
    tree = repo / ".crab" / "worktrees" / "again"
    git_in(tree, "add", "-A")
    git_in(tree, "commit", "-q", "-m", "the note")  # committed: nothing uncommitted left in it
    second = crab_in(repo, [DONE], "run", "--provider", "fake", "-m", "script", "--worktree=again", "look")
    assert second.returncode == 0, second.stderr
    assert f"worktree kept: {tree} on branch crab/again (1 commit, 1 file changed, 1 insertion(+))" in second.stderr
    assert tree.is_dir() and "crab/again" in git_in(repo, "branch", "--list", "crab/*")
