"""Cutting text on line and UTF-8 boundaries."""

from __future__ import annotations

from crab._contracts.truncate import OutputLimit
from crab._values.truncate import split_lines, truncate
from hypothesis import given
from hypothesis import strategies as st


def test_head_and_tail_keep_whole_lines():
    text = "".join(f"{i}\n" for i in range(100))
    head, cut = truncate(text, OutputLimit(lines=5, bytes=10_000))
    assert head == "0\n1\n2\n3\n4\n"
    assert cut is not None and cut.limit == "lines" and cut.total_lines == 100
    tail, cut = truncate(text, OutputLimit(lines=5, bytes=10_000, keep="tail"))
    assert tail == "95\n96\n97\n98\n99\n"


def test_byte_limit_on_a_single_long_line_cuts_on_a_character_boundary():
    text = "é" * 100  # two bytes each
    head, cut = truncate(text, OutputLimit(lines=10, bytes=7))
    assert head == "ééé"
    assert cut is not None and cut.limit == "bytes"


@given(st.text(), st.integers(1, 50), st.integers(1, 200), st.sampled_from(["head", "tail"]))
def test_truncation_is_a_valid_piece_within_budget(text, lines, size, keep):
    result, cut = truncate(text, OutputLimit(lines=lines, bytes=size, keep=keep))
    if cut is None:
        assert result == text
        return
    assert len(result.encode()) <= size
    assert len(split_lines(result)) <= lines
    if keep == "head":
        assert text.startswith(result)
    else:
        assert text.endswith(result)


def test_only_newlines_break_lines():
    text = "a\fb\u2028c\nd"
    assert split_lines(text) == ["a\fb\u2028c\n", "d"]
    kept, cut = truncate(text, OutputLimit(lines=1, bytes=1000))
    assert kept == "a\fb\u2028c\n"
    assert cut is not None
    assert cut.total_lines == 2
