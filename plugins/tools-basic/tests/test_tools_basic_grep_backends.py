"""grep gives the same output with ripgrep as with pure Python, on awkward files and patterns."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from crab_tools_basic import grep_worker
from crab_tools_basic.grep_engine import Target
from crab_tools_basic.search import search
from crab_tools_basic.workspace import Workspace
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.rg


def awkward_tree(root: Path) -> None:
    files: dict[str, bytes] = {
        ".gitignore": b"ignored/\n*.tmp\n",
        "crlf.txt": b"alpha beta\r\ngamma\r\nalpha\r\n",
        "bom.txt": b"\xef\xbb\xbfalpha first\nsecond alpha\n",
        "no-final-newline.txt": b"one\ntwo alpha",
        "unicode.txt": "Ärger ÄRGER ärger\nstraße\n日本語 alpha\n".encode(),
        "latin1.txt": "caf\xe9 alpha\n".encode("latin-1"),
        "long.txt": b"alpha " + b"x" * 10_000 + b"\nshort alpha\n",
        "long-unicode.txt": b"alpha " + "é".encode() * 6000 + b"\n",
        "late-nul.txt": b"alpha\n" + b"y" * 9000 + b"\0alpha\n",
        "early-nul.bin": b"alpha\0\n",
        "far-nul.txt": b"alpha\n" + b"y\n" * 200_000 + b"\0alpha\n",
        "utf16.txt": "alpha utf16\n".encode("utf-16"),
        "empty.txt": b"",
        "blank-lines.txt": b"\n\nalpha\n\n\nalpha\n\n",
        "ctx.txt": b"".join(b"alpha %d\n" % i if i % 7 == 0 else b"row %d\n" % i for i in range(60)),
        "ignored/x.txt": b"alpha\n",
        "skip.tmp": b"alpha\n",
        "deep/a/b/c.py": b"def alpha():\n    return 'alpha'\n",
        "-dash.txt": b"alpha dash\n",
        "sp ace.txt": b"alpha space\n",
    }
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


PATTERNS = [
    "alpha", "^alpha", "alpha$", r"\balpha\b", "a.p", "^$", "x{3}", "ärger", "STRASSE", "日本", r"\d+",
    r"alpha \d", "(al|ga)", "[a-c]+", r"return '\w+'", "é+", "dash", "^", r"(?<=def )alpha", r"(a)\1",
]  # fmt: skip


RG_REJECTS = {r"(?<=def )alpha", r"(a)\1"}  # look-around and back-references: Python answers these


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("ignore_case", [False, True])
@pytest.mark.parametrize("context", [0, 2])
def test_backends_agree(
    tmp_path: Path, pattern: str, ignore_case: bool, context: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    awkward_tree(tmp_path)
    ws = Workspace(tmp_path)
    python = search(ws, pattern, ignore_case=ignore_case, context=context, backend="python")
    if pattern not in RG_REJECTS:
        # Make sure ripgrep really answered, rather than a silent fall-back to Python.
        # (Files with a NUL byte past 8 KB are text to Python but binary to ripgrep: only those go there.)
        real = grep_worker.search_in_worker

        def only_late_nul_files(targets: list[Target], *args: Any) -> Any:
            if any(not t.display.endswith("-nul.txt") for t in targets):
                pytest.fail("fell back to Python")
            return real(targets, *args)

        monkeypatch.setattr(grep_worker, "search_in_worker", only_late_nul_files)
    rg = search(ws, pattern, ignore_case=ignore_case, context=context, backend="rg")
    assert rg == python


def test_backends_agree_with_path_and_glob(tmp_path: Path) -> None:
    awkward_tree(tmp_path)
    ws = Workspace(tmp_path)
    for path, glob in (("deep", None), (None, "*.py"), (None, "deep/**/*.py"), ("crlf.txt", None)):
        python = search(ws, "alpha", path=path, glob=glob, backend="python")
        assert python.count("alpha") > 0
        assert search(ws, "alpha", path=path, glob=glob, backend="rg") == python


def test_many_files_are_searched_in_batches(tmp_path: Path) -> None:
    for i in range(3000):
        (tmp_path / f"{'n' * 60}{i:05}.txt").write_text("needle\n" if i % 100 == 0 else "hay\n")
    ws = Workspace(tmp_path)
    python = search(ws, "needle", backend="python")
    assert python.count("needle") == 30
    assert search(ws, "needle", backend="rg") == python


LINE = st.text(st.sampled_from(list("ab \tXé日\r")), max_size=10)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(LINE, max_size=8), min_size=1, max_size=4),
    st.sampled_from(["a", "b+", "^a", "a$", "X", "é", "a b", r"\s", "^$", r"\w\w", "ab|ba", "[^a]"]),
    st.booleans(),
    st.integers(0, 2),
)
def test_backends_agree_on_random_files(
    contents: list[list[str]], pattern: str, ignore_case: bool, context: int
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for i, lines in enumerate(contents):
            (root / f"f{i}.txt").write_text("\n".join(lines), newline="")
        ws = Workspace(root)
        python = search(ws, pattern, ignore_case=ignore_case, context=context, backend="python")
        assert search(ws, pattern, ignore_case=ignore_case, context=context, backend="rg") == python


@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")
@pytest.mark.parametrize("pattern", [r"[[:digit:]]", r"alpha\Z"])
def test_syntax_the_engines_read_differently_goes_to_python(tmp_path: Path, pattern: str) -> None:
    (tmp_path / "a.txt").write_text("alpha 7 :\n")
    ws = Workspace(tmp_path)
    assert search(ws, pattern, backend="rg") == search(ws, pattern, backend="python")


@pytest.mark.parametrize("pattern", ["foo(", "a.b", "[x]", r"\d", "(a|b", "{1}", "x$"])
@pytest.mark.parametrize("ignore_case", [False, True])
def test_backends_agree_on_literal_text(tmp_path: Path, pattern: str, ignore_case: bool) -> None:
    (tmp_path / "a.txt").write_text("call foo(1)\naxb a.b\n[x] x\n\\d 7\n(a|b {1}\nx$ end\nA.B FOO(\n")
    ws = Workspace(tmp_path)
    python = search(ws, pattern, ignore_case=ignore_case, backend="python", literal=True)
    assert search(ws, pattern, ignore_case=ignore_case, backend="rg", literal=True) == python
    assert python.startswith("a.txt:")


@pytest.mark.parametrize("pattern", ["alpha", r"(?<=def )alpha", "^$"])
def test_backends_agree_on_files_only_and_limit(tmp_path: Path, pattern: str) -> None:
    awkward_tree(tmp_path)
    ws = Workspace(tmp_path)
    for limit in (None, 1, 3):
        python = search(ws, pattern, backend="python", files_only=True, limit=limit)
        assert search(ws, pattern, backend="rg", files_only=True, limit=limit) == python
        python = search(ws, pattern, backend="python", limit=limit, context=1)
        assert search(ws, pattern, backend="rg", limit=limit, context=1) == python
