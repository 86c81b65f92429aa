"""glob, ls and grep's Python path against real git on a tree of awkward ignore rules.

Every ignore source git reads is in play: nested .gitignore files, ``.git/info/exclude`` and a
global excludes file named by ``core.excludesFile`` in a ``~/.gitconfig`` (HOME is the test's
own folder, for git and for crab). git is the reference; where pathspec alone read a rule
differently from git, the case is marked with the crab fix that makes them agree.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from crab import ToolContext, ToolResult
from crab.tools import run_tool
from crab_tools_basic.registry import build_tools
from crab_tools_basic.walk import list_folder, parent_stack, walk_files

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed: nothing to compare against")

ROOT_RULES = [
    "# a comment, not a rule",
    "\\#hash.txt",  # escaped '#': a rule for a file named '#hash.txt'
    "\\!bang.txt",  # escaped '!': a rule, not a negation
    "trailing.txt   ",  # trailing spaces are dropped
    "escaped-space\\ ",  # ... unless escaped
    "escaped-then-more\\  ",  # escaped, then one more trailing space (pathspec failed on it)
    "tab-name.txt\t",  # a trailing tab is part of the name for git (pathspec stripped it)
    "lone-backslash\\",  # never matches in git (pathspec raised for it)
    "crlf.txt\r",  # git drops the CR of a CRLF line
    "*.log",
    "!keep.log",
    "build/",  # folders only: the file 'build' elsewhere stays
    "/anchored.txt",
    "docs/**/*.tmp",
    "**/cache",
    "a/**/b",
    "x[!y]z",  # a class never matches '/' (pathspec's [^y] did: 'x/z' was hidden)
    "foo/**",  # everything inside foo, not foo itself
    "nested/*",
    "!nested/keepme",
    "!important/",
    "[]]bracket.txt",
    "*.bak",  # re-included below by a negation ...
    "!wanted.bak",
    "!prec.txt",  # ... and info/exclude's 'prec.txt' is overridden by this
    "dirs-only-but-kept/",
    "!dirs-only-but-kept/",
]
SUB_RULES = ["*.txt", "!important.txt", "/local-only", "deeper/"]
INFO_EXCLUDE = ["excluded-by-info.txt", "/sub/info-anchored", "prec.txt"]
GLOBAL_EXCLUDES = ["*.swp", "global-dir/", "*.orig", "!sub/keep.orig"]

FILES = [
    "#hash.txt", "!bang.txt", "bang.txt", "trailing.txt", "escaped-space ", "escaped-space",
    "escaped-then-more ", "tab-name.txt\t", "tab-name.txt", "lone-backslash", "lone-backslash\\",
    "crlf.txt", "debug.log", "keep.log", "deep/er/x.log", "deep/er/keep.log", "build/out.o", "src/build",
    "src/build.d/x", "anchored.txt", "src/anchored.txt", "docs/a.tmp", "docs/x/y/b.tmp", "docs/c.md",
    "cache/c1", "src/cache/c2", "a/b", "a/m/n/b", "a/bb", "xaz", "xyz", "x/z", "foo/in.txt", "foo/deep/in2",
    "nested/gone.txt", "nested/keepme/k.txt", "important/i.log", "]bracket.txt", "x.bak", "wanted.bak",
    "prec.txt", "dirs-only-but-kept/d.txt", "sub/a.txt", "sub/important.txt", "sub/local-only",
    "sub/more/local-only", "sub/deeper/z.md", "sub/x/deeper/z.md", "sub/keep.md", "sub/info-anchored",
    "info-anchored", "excluded-by-info.txt", "sub/excluded-by-info.txt", "edit.swp", "sub/edit.swp",
    "global-dir/g.md", "sub/global-dir/g.md", "merge.orig", "sub/keep.orig", "plain.md",
]  # fmt: skip


def _lines(rules: list[str]) -> bytes:
    return "".join(rule + "\n" for rule in rules).encode("utf-8")


@pytest.fixture
def repo(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text('[user]\n\tname = t\n[core]\n\texcludesFile = "~/global-ignore" ; a comment\n')
    (home / "global-ignore").write_bytes(_lines(GLOBAL_EXCLUDES))
    for key in ("GIT_CONFIG_GLOBAL", "GIT_DIR", "GIT_WORK_TREE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    for name in FILES:
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(f"needle in {name!r}\n")
    (workspace / ".gitignore").write_bytes(_lines(ROOT_RULES))
    (workspace / "sub" / ".gitignore").write_bytes(_lines(SUB_RULES))
    (workspace / ".git" / "info").mkdir(exist_ok=True)
    (workspace / ".git" / "info" / "exclude").write_bytes(_lines(INFO_EXCLUDE))
    return workspace


def git_visible_files(root: Path) -> set[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "-z"], cwd=root, check=True, capture_output=True
    ).stdout
    return {name for name in listed.decode().split("\0") if name}


def git_ignored(root: Path, paths: list[str]) -> set[str]:
    """Which of ``paths`` ``git check-ignore`` calls ignored.

    Folders go without a trailing ``/`` (git looks their kind up): with one, check-ignore lets
    ``nested/*`` match ``nested/`` itself, which git's own listing does not.
    """
    done = subprocess.run(
        ["git", "check-ignore", "--stdin", "-z"], cwd=root, input="\0".join(paths).encode() + b"\0",
        capture_output=True, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return {name for name in done.stdout.decode().split("\0") if name}


def test_glob_and_grep_list_what_git_lists(
    repo: Path, call: Callable[..., ToolResult], settings: dict[str, object]
) -> None:
    expected = git_visible_files(repo)
    # Guards that the cases are live: each source hides something and a negation shows something.
    assert {"excluded-by-info.txt", "edit.swp", "sub/a.txt", "debug.log", "xaz"}.isdisjoint(expected)
    assert {"keep.log", "wanted.bak", "prec.txt", "sub/keep.orig", "tab-name.txt", "x/z"} <= expected
    assert set(call("glob", pattern="*").content.split("\n")) == expected
    settings["grep_backend"] = "python"
    grepped = call("grep", pattern="needle").content.split("\n")
    assert {line.split(":1:")[0] for line in grepped} == expected - {".gitignore", "sub/.gitignore"}


def test_ls_hides_what_git_check_ignore_ignores(repo: Path, call: Callable[..., ToolResult]) -> None:
    folders = sorted({"", *(str(Path(name).parent) for name in FILES if "/" in name)})
    for folder in folders:
        real = repo / folder
        if not real.is_dir() or (folder and git_ignored(repo, [folder])):
            continue
        names = [n for n in os.listdir(real) if n != ".git"]
        paths = [f"{folder}/{n}" if folder else n for n in names]
        hidden = git_ignored(repo, paths)
        kept = [n for n, p in zip(names, paths, strict=True) if p not in hidden]
        shown = sorted(n + "/" if (real / n).is_dir() else n for n in kept)
        listed = call("ls", path=folder or ".").content.split("\n")
        if listed[-1].endswith("hidden by .gitignore]"):
            assert listed.pop() == f"[{len(hidden)} hidden by .gitignore]", folder
        else:
            assert not hidden, folder
        assert sorted(n for n in listed if n != "(empty folder)") == shown, folder


def test_a_workspace_inside_a_repository_gets_its_excludes_anchored_at_the_top(repo: Path, ctx: ToolContext) -> None:
    # crab started in repo/sub: '/sub/info-anchored' in info/exclude still means repo/sub/info-anchored,
    # and '!sub/keep.orig' in the global file still re-includes repo/sub/keep.orig.
    inner = ToolContext(session_id="inner", workspace=repo / "sub", settings=ctx.settings)
    glob = {t.name: t for t in build_tools(ctx.settings)}["glob"]
    found = asyncio.run(run_tool(glob, {"pattern": "*"}, inner)).content.split("\n")
    expected = {name.removeprefix("sub/") for name in git_visible_files(repo) if name.startswith("sub/")}
    assert set(found) == expected
    assert "keep.orig" in found
    assert "info-anchored" not in found


# Rules pathspec alone reads differently from git (each was seen failing before crab's fix in
# ``gitignore``); git is the reference. Each case: the rules, the files, what git shows.
PATHSPEC_DIFFERS = {
    "a final /** hides only what is inside": (["foo/**"], ["foo/x", "foo/d/y"], []),
    "a/**/b/**/ hides the folders below b, not b's files": (
        ["a/**/b/**/"],
        ["a/b/f", "a/b/c/g", "a/x/b/f", "a/x/b/d/e"],
        ["a/b/f", "a/x/b/f"],
    ),
    "a negated class never matches /": (["x[!y]z"], ["x/z", "xaz", "xyz"], ["x/z", "xyz"]),
    "a trailing tab is part of the name": (["tab.txt\t"], ["tab.txt", "tab.txt\t"], ["tab.txt"]),
    "an escaped space, then a trailing one": (["esc\\  "], ["esc ", "esc"], ["esc"]),
    "a lone trailing backslash matches nothing": (["lone\\", "*.o"], ["lone", "lone\\", "x.o"], ["lone", "lone\\"]),
}


@pytest.mark.parametrize("case", sorted(PATHSPEC_DIFFERS))
def test_rules_where_pathspec_alone_differs_from_git(
    case: str, repo: Path, call: Callable[..., ToolResult], tmp_path: Path
) -> None:
    rules, files, visible = PATHSPEC_DIFFERS[case]
    root = tmp_path / "case"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    (root / ".gitignore").write_bytes(_lines(rules))
    assert git_visible_files(root) == {".gitignore", *visible}
    assert {entry.relative for entry in walk_files(root, root)} == {".gitignore", *visible}
    top = [n for n in os.listdir(root) if n != ".git"]
    shown = {os.path.basename(e.path) for e in list_folder(root, root, parent_stack(root, root)).entries}
    assert shown == set(top) - git_ignored(root, top)


def test_a_worktree_reads_info_exclude_from_the_common_git_dir(repo: Path, tmp_path: Path) -> None:
    # In a worktree .git is a file ("gitdir: …/.git/worktrees/x") whose commondir names the
    # shared folder, where info/exclude lives; git reads it there, and so does the walk.
    subprocess.run(["git", "-C", str(repo), "add", "plain.md"], check=True)
    who = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "-C", str(repo), *who, "commit", "-qm", "one", "--no-verify"], check=True)
    tree = tmp_path / "tree"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", str(tree)], check=True)
    (tree / "excluded-by-info.txt").write_text("")
    (tree / "kept.txt").write_text("")
    assert (tree / ".git").is_file()
    assert git_visible_files(tree) == {"kept.txt"}  # plain.md is tracked, so not "other"
    assert {entry.relative for entry in walk_files(tree, tree)} == {"plain.md", "kept.txt"}
