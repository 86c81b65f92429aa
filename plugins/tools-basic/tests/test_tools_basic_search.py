"""glob, grep and ls: .gitignore honoured, binary files skipped, results and lines capped."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from crab import ToolError, ToolResult
from crab_tools_basic.grep_engine import search_text
from crab_tools_basic.search import search
from crab_tools_basic.settings import Backend
from crab_tools_basic.workspace import Workspace


@pytest.fixture
def tree(workspace: Path) -> Path:
    files = {
        ".gitignore": "node_modules/\n*.log\n!keep.log\n",
        "README.md": "# Title\nhello world\n",
        "src/app.py": "import os\n\ndef hello():\n    return 'hello'\n",
        "src/util.py": "HELLO = 1\n",
        "src/.gitignore": "generated.py\n",
        "src/generated.py": "hello from generated\n",
        "debug.log": "hello log\n",
        "keep.log": "hello kept\n",
        "node_modules/lib/index.js": "hello module\n",
        ".git/config": "hello git\n",
        ".github/ci.yml": "hello ci\n",
    }
    for name, content in files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(content)
    (workspace / "data.bin").write_bytes(b"hello\0binary\n")
    return workspace


def test_glob_honours_gitignore_and_sorts(tree: Path, call: Callable[..., ToolResult]) -> None:
    assert call("glob", pattern="*").content == "\n".join(
        [".github/ci.yml", ".gitignore", "README.md", "data.bin", "keep.log", "src/.gitignore", "src/app.py",
         "src/util.py"]
    )  # fmt: skip
    assert call("glob", pattern="*.py").content == "src/app.py\nsrc/util.py"
    assert call("glob", pattern="*.py", path="src").content == "src/app.py\nsrc/util.py"
    assert call("glob", pattern="src/*.py").content == "src/app.py\nsrc/util.py"
    assert "no files match" in call("glob", pattern="*.rs").content


def test_glob_caps_results(workspace: Path, call: Callable[..., ToolResult]) -> None:
    for i in range(1005):
        (workspace / f"f{i:04}.txt").write_text("")
    content = call("glob", pattern="*.txt").content
    lines = content.split("\n")
    assert len(lines) == 1001
    assert lines[-1] == "[showing the first 1000 of 1005 files; narrow the pattern or the path]"


def test_ls_lists_folders_first_and_says_what_it_hid(tree: Path, call: Callable[..., ToolResult]) -> None:
    (tree / "link").symlink_to("README.md")
    assert call("ls").content == "\n".join(
        [".github/", "src/", ".gitignore", "README.md", "data.bin", "keep.log", "link@ -> README.md",
         "[2 hidden by .gitignore]"]
    )  # fmt: skip
    assert call("ls", path="src").content == ".gitignore\napp.py\nutil.py\n[1 hidden by .gitignore]"
    assert "is a file" in call("ls", path="README.md").content
    (tree / "empty").mkdir()
    assert call("ls", path="empty").content == "(empty folder)"


def test_ls_caps_entries(workspace: Path, call: Callable[..., ToolResult]) -> None:
    for i in range(510):
        (workspace / f"e{i:03}").write_text("")
    lines = call("ls").content.split("\n")
    assert len(lines) == 501
    assert lines[-1] == "[showing 500 of 510 entries; use glob to narrow]"


@pytest.mark.parametrize(
    "backend",
    [
        "python",
        pytest.param("rg", marks=pytest.mark.rg),
    ],
)
def test_grep_skips_ignored_git_and_binary_files(tree: Path, backend: Backend) -> None:
    ws = Workspace(tree)
    assert search(ws, "hello", backend=backend) == "\n".join(
        [".github/ci.yml:1:hello ci", "README.md:2:hello world", "keep.log:1:hello kept",
         "src/app.py:3:def hello():", "src/app.py:4:    return 'hello'"]
    )  # fmt: skip


def test_grep_options(tree: Path, call: Callable[..., ToolResult]) -> None:
    assert call("grep", pattern="hello", path="src", ignore_case=True).content == (
        "src/app.py:3:def hello():\nsrc/app.py:4:    return 'hello'\nsrc/util.py:1:HELLO = 1"
    )
    assert call("grep", pattern="hello", glob="*.md").content == "README.md:2:hello world"
    assert call("grep", pattern="hello", path="src/app.py", context=1).content == (
        "src/app.py-2-\nsrc/app.py:3:def hello():\nsrc/app.py:4:    return 'hello'"
    )
    assert call("grep", pattern="nothing-here").content == "no matches for 'nothing-here' in ."
    bad = call("grep", pattern="(unclosed")
    assert bad.is_error
    assert "not a valid regular expression" in bad.content


def test_grep_caps_matches_and_line_length(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "many.txt").write_text("match\n" * 150)
    (workspace / "wide.txt").write_text("match" + "x" * 1000 + "\n")
    lines = call("grep", pattern="match").content.split("\n")
    assert len(lines) == 101
    assert lines[-1] == "[showing the first 100 of 151 matching lines in 2 files; narrow the pattern, path or glob]"
    wide = call("grep", pattern="match", path="wide.txt").content
    assert wide == "wide.txt:1:match" + "x" * 495 + "… [line cut at 500 characters]"


def test_grep_context_groups_are_separated(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "a.txt").write_text("".join(f"{'hit' if i in (2, 3, 9) else 'row'} {i}\n" for i in range(1, 13)))
    (workspace / "b.txt").write_text("hit b\n")
    assert call("grep", pattern="hit", context=1).content == "\n".join(
        ["a.txt-1-row 1", "a.txt:2:hit 2", "a.txt:3:hit 3", "a.txt-4-row 4", "--", "a.txt-8-row 8",
         "a.txt:9:hit 9", "a.txt-10-row 10", "--", "b.txt:1:hit b"]
    )  # fmt: skip


def test_search_text_matches_each_line_on_its_own() -> None:
    text = "ab\ncd\n\nef"
    assert search_text(text, re.compile(r"b\s+c", re.M)) == []  # no match across lines
    assert search_text(text, re.compile(r"^$", re.M)) == [(3, "")]
    assert [n for n, _ in search_text(text + "\n", re.compile(r"", re.M))] == [1, 2, 3, 4]  # none after the last
    assert search_text("a\nb\na", re.compile("a")) == [(1, "a"), (3, "a")]
    assert search_text("x\r\n", re.compile(r"x$", re.M)) == []  # as in grep, $ is before \n only


def test_caseless_literal_shortcut_is_only_taken_when_exact(workspace: Path) -> None:
    (workspace / "ascii.txt").write_text("Deprecated here\n")
    (workspace / "long-s.txt").write_text("\u017ftop\n")  # LATIN SMALL LETTER LONG S matches s under IGNORECASE
    ws = Workspace(workspace)
    assert search(ws, "DEPRECATED", ignore_case=True, backend="python") == "ascii.txt:1:Deprecated here"
    assert search(ws, "STOP", ignore_case=True, backend="python") == "long-s.txt:1:\u017ftop"
    assert search(ws, "a.c", ignore_case=True, backend="python") == "no matches for 'a.c' in ."


def test_an_abandoned_search_stops_early(tmp_path: Path) -> None:
    import threading

    from crab import ToolError
    from crab_tools_basic.search import find_files

    for i in range(3):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / "f.txt").write_text("needle\n")
    ws = Workspace(tmp_path.resolve())
    stop = threading.Event()
    assert "d0/f.txt" in find_files(ws, "*.txt", None, stop)
    assert "needle" in search(ws, "needle", backend="python", stop=stop)
    stop.set()
    with pytest.raises(ToolError, match="cancelled"):
        find_files(ws, "*.txt", None, stop)
    with pytest.raises(ToolError, match="cancelled"):
        search(ws, "needle", backend="python", stop=stop)


@pytest.mark.parametrize("backend", ["python", pytest.param("rg", marks=pytest.mark.rg)])
def test_grep_literal_mode_takes_the_text_as_written(workspace: Path, backend: Backend) -> None:
    (workspace / "a.py").write_text("print(x)\nprint x\nprintXx)\n")
    ws = Workspace(workspace)
    assert search(ws, "print(x)", backend=backend, literal=True) == "a.py:1:print(x)"
    assert search(ws, "print.x", backend=backend, literal=True) == "no matches for 'print.x' in ."
    with pytest.raises(ToolError, match=r"not a valid regular expression.*set literal"):
        search(ws, "print(", backend=backend)
    assert search(ws, "PRINT(", backend=backend, literal=True, ignore_case=True) == "a.py:1:print(x)"


@pytest.mark.parametrize("backend", ["python", pytest.param("rg", marks=pytest.mark.rg)])
def test_grep_files_only_lists_each_matching_file_once(tree: Path, backend: Backend) -> None:
    ws = Workspace(tree)
    assert search(ws, "hello", backend=backend, files_only=True) == "\n".join(
        [".github/ci.yml", "README.md", "keep.log", "src/app.py"]
    )
    # context means nothing without lines; it is ignored, not an error.
    assert search(ws, "hello", backend=backend, files_only=True, context=3, limit=2) == "\n".join(
        [
            ".github/ci.yml",
            "README.md",
            "[showing the first 2 of 4 files with a match; narrow the pattern, path or glob]",
        ]
    )


def test_grep_limit_lowers_the_lines_shown(workspace: Path, call: Callable[..., ToolResult]) -> None:
    (workspace / "many.txt").write_text("match\n" * 150)
    lines = call("grep", pattern="match", limit=5).content.split("\n")
    assert lines == [f"many.txt:{n}:match" for n in range(1, 6)] + [
        "[showing the first 5 of 150 matching lines in 1 files; narrow the pattern, path or glob]"
    ]
    assert len(call("grep", pattern="match", limit=1000).content.split("\n")) == 101  # 100 at most
    assert call("grep", pattern="match", limit=0).is_error
    for i in range(1005):
        (workspace / f"f{i:04}.txt").write_text("match\n")
    names = call("grep", pattern="match", files_only=True, limit=5000).content.split("\n")
    assert len(names) == 1001 and names[-1].startswith("[showing the first 1000 of 1006 files")
