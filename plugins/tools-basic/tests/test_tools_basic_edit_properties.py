"""Property tests for edit: a successful edit is exactly a splice; a failed one changes nothing."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest
from crab import ToolContext, ToolError
from crab.tools import run_tool
from crab_tools_basic.registry import build_tools
from crab_tools_basic.splice import apply_edits
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

ALPHABET = st.sampled_from(list("abcxyz ABC\t(){}=:;é日π😀\r"))
EDIT_TOOL = next(t for t in build_tools({}) if t.name == "edit")


@st.composite
def files(draw: st.DrawFn) -> str:
    """Text with LF, CRLF or mixed endings, non-ASCII, stray CRs, maybe no final newline."""
    lines = draw(st.lists(st.text(ALPHABET, max_size=12), max_size=14))
    style = draw(st.sampled_from(["lf", "crlf", "mixed"]))
    pieces: list[str] = []
    for line in lines:
        ending = {"lf": "\n", "crlf": "\r\n"}.get(style) or draw(st.sampled_from(["\n", "\r\n"]))
        pieces.append(line + ending)
    text = "".join(pieces)
    if text and draw(st.booleans()):
        text = text.rstrip("\r\n") + draw(st.text(ALPHABET, max_size=5))
    return text


def reference_ending(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf > text.count("\n") - crlf else "\n"


def occurrences(haystack: str, needle: str) -> int:
    return sum(1 for i in range(len(haystack)) if haystack.startswith(needle, i))


@st.composite
def file_with_edits(draw: st.DrawFn) -> tuple[bytes, str, list[tuple[str, str]], list[tuple[int, int, str]]]:
    """A file, valid edits against it, and the spans of the original text they replace."""
    text = draw(files())
    bom = draw(st.booleans())
    folded = text.replace("\r\n", "\n")
    # Cut points never fall between the CR and LF of a CRLF: that pair is one line break.
    cuts = [i for i in range(len(text) + 1) if not (0 < i < len(text) and text[i - 1 : i + 1] == "\r\n")]
    assume(len(cuts) >= 2)
    points = sorted(draw(st.sets(st.sampled_from(cuts), min_size=2, max_size=8)))
    edits: list[tuple[str, str]] = []
    spans: list[tuple[int, int, str]] = []
    for start, end in zip(points[::2], points[1::2], strict=False):
        old = text[start:end]
        new = draw(st.text(st.sampled_from(list("qwe\nü ")), max_size=8))
        old_lf = old.replace("\r\n", "\n")
        if occurrences(folded, old_lf) != 1 or new.replace("\r\n", "\n") == old_lf:
            continue
        edits.append((old, new))
        spans.append((start, end, new))
    assume(edits)
    order = draw(st.permutations(range(len(edits))))
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode()
    return data, text, [edits[i] for i in order], spans


@settings(max_examples=400, deadline=None)
@given(file_with_edits())
def test_successful_edit_is_exactly_the_reference_splice(
    case: tuple[bytes, str, list[tuple[str, str]], list[tuple[int, int, str]]],
) -> None:
    data, text, edits, spans = case
    ending = reference_ending(text)
    expected = []
    cursor = 0
    for start, end, new in spans:
        expected.append(text[cursor:start])
        expected.append(new.replace("\r\n", "\n").replace("\n", ending))
        cursor = end
    expected.append(text[cursor:])
    prefix = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    result, _ = apply_edits(data, edits)
    assert result == prefix + "".join(expected).encode()


@st.composite
def file_with_a_bad_edit(draw: st.DrawFn) -> tuple[bytes, list[tuple[str, str]]]:
    """A file and a list of edits of which at least one must be refused."""
    text = draw(files())
    folded = text.replace("\r\n", "\n")
    kind = draw(st.sampled_from(["missing", "empty", "noop", "ambiguous", "overlap"]))
    good: list[tuple[str, str]] = []
    if folded:
        start = draw(st.integers(0, len(folded) - 1))
        end = draw(st.integers(start + 1, len(folded)))
        if occurrences(folded, folded[start:end]) == 1:
            good.append((folded[start:end], "§"))
    if kind == "missing":
        bad = [(draw(st.text(ALPHABET, max_size=6)) + "¶", "x")]
    elif kind == "empty":
        bad = [("", "x")]
    elif kind == "noop":
        bad = [("a", "a")]
    elif kind == "ambiguous":
        repeated = [c for c in set(folded) if folded.count(c) > 1]
        bad = [(draw(st.sampled_from(repeated)), "¤")] if repeated else [("¶ absent", "x")]
    elif not good or len(good[0][0]) < 2:
        bad = [("", "x")]
    else:
        bad = [(good[0][0][1:], "¤")]  # overlaps the good edit, or is ambiguous if not unique
    edits = good + bad
    order = draw(st.permutations(range(len(edits))))
    return text.encode(), [edits[i] for i in order]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(file_with_a_bad_edit())
def test_failed_edit_leaves_the_file_byte_identical(case: tuple[bytes, list[tuple[str, str]]]) -> None:
    data, edits = case
    with pytest.raises(ToolError):
        apply_edits(data, edits)
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "f.txt"
        target.write_bytes(data)
        ctx = ToolContext(session_id="p", workspace=Path(folder))
        read_tool = next(t for t in build_tools({}) if t.name == "read")
        asyncio.run(run_tool(read_tool, {"path": "f.txt"}, ctx))
        before = target.stat()
        arguments = {"path": "f.txt", "edits": [{"old": o, "new": n} for o, n in edits]}
        result = asyncio.run(run_tool(EDIT_TOOL, arguments, ctx))
        assert result.is_error
        assert target.read_bytes() == data
        assert target.stat().st_mtime_ns == before.st_mtime_ns
        assert sorted(p.name for p in Path(folder).iterdir()) == ["f.txt"]


@settings(max_examples=300, deadline=None)
@given(
    st.text(st.sampled_from(list("ab\nc")), max_size=30), st.text(st.sampled_from(list("ab\n")), min_size=1, max_size=3)
)
def test_replace_all_is_str_replace(text: str, old: str) -> None:
    # On LF text without a BOM, replace_all is exactly Python's str.replace.
    new = "<" + old[::-1] + ">"
    data = text.encode()
    if old not in text:
        with pytest.raises(ToolError, match="not found"):
            apply_edits(data, [(old, new, True)])
        return
    result, landed = apply_edits(data, [(old, new, True)])
    assert result == text.replace(old, new).encode()
    assert len(landed) == text.count(old)
    lines = result.decode().split("\n")
    for where in landed:
        # Each place named holds a replacement: its first line holds the start of new.
        assert "<" in lines[where.first_line - 1]
