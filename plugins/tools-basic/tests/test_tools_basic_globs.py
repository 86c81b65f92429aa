"""Brace globs (``*.{ts,tsx}``) in glob and grep's ``glob`` filter: what they expand to (checked
against bash's own brace expansion), how they match, the cap on alternatives and linear time."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from crab import ToolError, ToolResult
from crab_tools_basic.globs import MAX_ALTERNATIVES, compile_glob, expand_braces
from hypothesis import given, settings
from hypothesis import strategies as st


def test_braces_expand_in_order_nested_and_sequential() -> None:
    assert expand_braces("*.{ts,tsx}") == ["*.ts", "*.tsx"]
    assert expand_braces("a{b,c}d{e,f}") == ["abde", "abdf", "acde", "acdf"]
    assert expand_braces("{src,lib}/{a,{b,c}}.py") == [
        "src/a.py",
        "src/b.py",
        "src/c.py",
        "lib/a.py",
        "lib/b.py",
        "lib/c.py",
    ]
    assert expand_braces("x{,.bak}") == ["x", "x.bak"]


def test_braces_that_are_not_a_group_stay_text() -> None:
    # No comma, no closing brace, escaped, or inside a character class: as in bash.
    assert expand_braces("{a}") == ["{a}"]
    assert expand_braces("{a,b") == ["{a,b"]
    assert expand_braces("\\{a,b}") == ["\\{a,b}"]
    assert expand_braces("[{,]x") == ["[{,]x"]
    assert compile_glob("{a}.txt").matches("{a}.txt")
    assert compile_glob("\\{a,b}").matches("{a,b}")


def test_brace_globs_match_names_and_paths() -> None:
    ts = compile_glob("*.{ts,tsx}")
    assert ts.matches("src/app.ts") and ts.matches("a/b/view.tsx")
    assert not ts.matches("src/app.js") and not ts.matches("src/app.tsxx")
    mixed = compile_glob("{*.md,docs/**}")
    assert mixed.matches("deep/notes.md") and mixed.matches("docs/a/b.py")
    assert not mixed.matches("src/a.py")
    folders = compile_glob("{src,tests}/**/*.py")
    assert folders.matches("src/a/b.py") and folders.matches("tests/t.py")
    assert not folders.matches("docs/c.py")


def test_too_many_alternatives_is_an_error_before_they_are_built() -> None:
    assert len(expand_braces("{a,b}" * 6)) == MAX_ALTERNATIVES
    with pytest.raises(ToolError, match=f"more than {MAX_ALTERNATIVES} globs"):
        expand_braces("{a,b}" * 7)
    with pytest.raises(ToolError, match="more than"):
        expand_braces("{" + ",".join("x" * 3 for _ in range(MAX_ALTERNATIVES + 1)) + "}")


def test_brace_globs_match_long_names_at_once() -> None:
    # Each alternative is one linear regex (several stars in one segment took hours before the
    # rewrite in glob_to_regex); braces multiply the count, never the time of one.
    assert not compile_glob("{*a*a*a*a*a*a*a*a*c,*b*b*b*b*b*b*b*c}").matches("a" * 200 + "b" * 200)
    assert compile_glob("{**/a/**/a/**/b,x}").matches("a/" * 200 + "b")


def _group(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(children, min_size=2, max_size=3).map(lambda parts: "{" + ",".join(parts) + "}")


WORDS = st.recursive(
    st.text(alphabet="ab", max_size=2),
    lambda inner: st.lists(st.one_of(inner, _group(inner)), min_size=1, max_size=3).map("".join),
    max_leaves=8,
)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@settings(max_examples=200, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=20))
def test_expansion_agrees_with_bash(words: list[str]) -> None:
    # The X keeps bash from dropping empty words; one bash run checks the whole batch.
    script = "\n".join(f"printf '<%s>' X{word}; echo" for word in words)
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, check=True)
    for word, line in zip(words, done.stdout.splitlines(), strict=True):
        assert expand_braces("X" + word) == line[1:-1].split("><"), word


def test_glob_and_grep_take_brace_globs(workspace: Path, call: Callable[..., ToolResult]) -> None:
    for name in ("src/app.ts", "src/view.tsx", "src/old.js", "README.md"):
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("needle\n")
    found = call("glob", pattern="*.{ts,tsx}")
    assert found.content.splitlines() == ["src/app.ts", "src/view.tsx"]
    hits = call("grep", pattern="needle", glob="*.{ts,tsx,md}")
    assert hits.content.splitlines() == ["README.md:1:needle", "src/app.ts:1:needle", "src/view.tsx:1:needle"]
    too_many = call("glob", pattern="{a,b}" * 7)
    assert too_many.is_error and "more than 64 globs" in too_many.content
