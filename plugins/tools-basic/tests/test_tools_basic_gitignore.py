"""The .gitignore matcher (pathspec made linear) and the glob matcher, rule by rule, against git on
random rule sets, and against pathspec's own patterns on random globs."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from crab_tools_basic.gitignore import _LinearPattern, compile_rules, load_ignore_file
from crab_tools_basic.globs import compile_glob, glob_to_regex
from crab_tools_basic.walk import walk_files
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

TREE = [
    "root.txt", "keep.log", "debug.log", "a.txt", "b.txt", "c.md", "x.md", "#hash", "trailing ",
    "build/out.bin", "build/keep.log", "docs/guide.md", "docs/api/ref.md", "docs/api/keep.log",
    "sub/tmp/f.txt", "tmp/t.txt", "a/b.txt", "a/x/b.txt", "a/x/y/b.txt", "a/keep.log",
    "src/m.py", "src/m.pyc", "src/__pycache__/m.pyo", "nested/deeper/z.txt",
    "nested/deeper/more/z.txt", "x/y/q.txt", "important/i.log", "dir1/sub/f.txt", "d2/e.txt",
    ".hidden/h.txt", ".env",
]  # fmt: skip

PATTERNS = [
    "*.log", "build/", "/root.txt", "docs/*.md", "**/tmp", "a/**/b.txt", "!keep.log", "sub/", "*.py[co]",
    "[ab].txt", "?.md", "x/y/", "\\#hash", "trailing\\ ", "**/*.txt", "!important/", "d*/", "nested/deeper/*",
    "!nested/deeper/more", "src/**", "!*.md", "/a/", "api", "*", "!*/", "**/keep.log", ".*", "!.env", "b.txt",
    "# comment", "", "docs/**/ref.md", "[!a].txt", "tmp/", "/*.txt", "d2", "x/**", "!d2/e.txt",
]  # fmt: skip


def git_visible(root: Path) -> set[str]:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=env)
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=root, check=True, capture_output=True, env=env,
    ).stdout  # fmt: skip
    return {name for name in listed.decode().split("\0") if name}


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed: nothing to compare against")
@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(PATTERNS), max_size=8),
    st.lists(st.sampled_from(PATTERNS), max_size=4),
    st.lists(st.sampled_from(PATTERNS), max_size=4),
)
# pathspec's own verdict on the whole path let docs/'s "!*/" re-include docs/api/keep.log.
@example(["*.log"], [], ["!*/"])
def test_walk_agrees_with_git(root_rules: list[str], a_rules: list[str], docs_rules: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name in TREE:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(name)
        for where, rules in (("", root_rules), ("a", a_rules), ("docs", docs_rules)):
            if rules:
                (root / where / ".gitignore").write_text("\n".join(rules) + "\n")
        ours = {entry.relative for entry in walk_files(root, root)}
        assert ours == git_visible(root)


@pytest.mark.parametrize(
    ("line", "path", "name", "is_dir", "ignored"),
    [
        ("*.log", "deep/x.log", "x.log", False, True),
        ("/top.txt", "sub/top.txt", "top.txt", False, None),
        ("/top.txt", "top.txt", "top.txt", False, True),
        ("build/", "build", "build", False, None),
        ("build/", "src/build", "build", True, True),
        ("doc/*.md", "doc/a.md", "a.md", False, True),
        ("doc/*.md", "doc/sub/a.md", "a.md", False, None),
        ("a/**/b", "a/b", "b", False, True),
        ("a/**/b", "a/x/y/b", "b", False, True),
        ("**/foo", "x/y/foo", "foo", False, True),
        ("!keep.log", "keep.log", "keep.log", False, False),
        ("\\!bang", "!bang", "!bang", False, True),
        ("trail\\ ", "trail ", "trail ", False, True),
        ("trail   ", "trail", "trail", False, True),
        ("[!a]b", "cb", "cb", False, True),
        ("[!a]b", "ab", "ab", False, None),
        ("?.c", "x/y.c", "y.c", False, True),
    ],
)
def test_single_rules(line: str, path: str, name: str, is_dir: bool, ignored: bool | None) -> None:
    spec = compile_rules([line])
    assert spec is not None
    assert spec.check_file(path + ("/" if is_dir else "")).include is ignored


def test_comments_and_blank_lines_are_not_rules() -> None:
    assert compile_rules(["# note"]) is None
    assert compile_rules(["   "]) is None
    assert compile_rules(["/"]) is None
    # pathspec refuses a lone trailing backslash; git's wildmatch just never matches it.
    assert compile_rules(["oops\\"]) is None


def test_globs_for_the_tools() -> None:
    assert compile_glob("*.py").matches("a/b/c.py")
    assert not compile_glob("src/*.py").matches("src/a/b.py")
    assert compile_glob("src/**/*.py").matches("src/b.py")
    assert compile_glob("src/**/*.py").matches("src/a/b/c.py")
    assert compile_glob("./docs/*.md").matches("docs/x.md")
    assert glob_to_regex("a*b") == "a[^/]*b"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab*/?", max_size=12), st.text(alphabet="ab/", max_size=12))
def test_linear_glob_regex_matches_what_the_plain_translation_matches(pattern: str, path: str) -> None:
    import re

    from crab_tools_basic.globs import _glob_pieces

    plain = re.compile("".join(_glob_pieces(pattern)) + r"\Z", re.DOTALL)
    linear = re.compile(glob_to_regex(pattern) + r"\Z", re.DOTALL)
    assert (plain.match(path) is None) == (linear.match(path) is None)


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet="ab*/?!", min_size=1, max_size=14), st.text(alphabet="ab/", min_size=1, max_size=14))
def test_linear_gitignore_pattern_matches_what_pathspec_matches(line: str, path: str) -> None:
    # The rewrite changes how a match is found, never whether there is one (no class or final
    # ``/**`` here: there crab differs from pathspec on purpose, tested against git).
    assume(not line.rstrip("/").endswith("/**"))
    try:
        stock = GitIgnoreSpecPattern(line)
    except ValueError:
        return
    ours = _LinearPattern(line)
    assert ours.include == stock.include
    if stock.regex is not None:
        assert (ours.regex.match(path) is None) == (stock.regex.match(path) is None)
        assert ours.match_file(path) is not None or stock.match_file(path) is None


def test_the_rewrite_still_finds_pathspecs_regex_shapes() -> None:
    # Checked first so that a pathspec whose regexes look different fails here, at once,
    # rather than hanging in the test below.
    assert _LinearPattern("*a*a*c").regex.pattern.count("(?>") == 2
    assert _LinearPattern("**/a/**/a/**/c").regex.pattern.count("(?>") == 2
    assert _LinearPattern("x[!y]z").regex.pattern.count("[^/y]") == 1
    assert _LinearPattern("foo/**").regex.match("foo/") is None


def test_many_stars_and_double_stars_match_long_names_at_once() -> None:
    # Each took hours as a plain backtracking regex (pathspec's own, too); a repository's
    # .gitignore chooses them.
    rules = compile_rules(["*a*a*a*a*a*a*a*a*a*a*a*a*c", "**/a/**/a/**/a/**/a/**/a/**/a/**/c"])
    assert rules is not None
    assert rules.check_file("a" * 200 + "b").include is None
    assert rules.check_file("a/" * 200 + "b").include is None
    assert rules.check_file("a/" * 200 + "c").include is True
    hostile = Path(tempfile.mkdtemp()) / ".gitignore"
    hostile.write_text("*a*a*a*a*a*a*a*a*a*a*a*a*c\n**/a/**/a/**/a/**/a/**/a/**/a/**/c\n")
    walked = load_ignore_file(hostile, "")
    assert walked is not None
    assert walked.decide("a" * 200 + "b", is_dir=False) is None
    assert walked.decide("a/" * 200 + "b", is_dir=False) is None
    assert walked.decide("a/" * 200 + "c", is_dir=True) is True
    assert not compile_glob("*a*a*a*a*a*a*a*a*a*a*a*a*c").matches("a" * 200 + "b")
    assert not compile_glob("**/a/**/a/**/a/**/a/**/a/**/a/**/c").matches("a/" * 200 + "b")
    assert compile_glob("**/a/**/a/**/b").matches("a/" * 200 + "b")
