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


@given(
    st.text(st.sampled_from(["a", "\n", "é", "€", "😀", "\udcff", "\f", "\u2028"]), max_size=80),
    st.integers(1, 30),
    st.integers(1, 200),
)
def test_text_is_cut_exactly_when_it_is_over_a_budget(text, lines, size):
    """What fits is told without splitting or encoding the text: the answer is the same as counting."""
    within = len(split_lines(text)) <= lines and len(text.encode("utf-8", "surrogatepass")) <= size
    result, cut = truncate(text, OutputLimit(lines=lines, bytes=size))
    assert (cut is None) == within
    assert (result == text) if within else cut is not None


def test_a_long_ascii_text_at_its_budgets_is_kept_whole():
    text = "".join(f"{i:>6}\tline {i}\n" for i in range(1, 2001))
    assert truncate(text, OutputLimit(lines=2000, bytes=len(text))) == (text, None)
    assert truncate(text, OutputLimit(lines=1999, bytes=len(text)))[1] is not None
    assert truncate(text, OutputLimit(lines=2000, bytes=len(text) - 1))[1] is not None
    assert truncate(text.rstrip("\n"), OutputLimit(lines=2000, bytes=len(text))) == (text.rstrip("\n"), None)


def test_four_byte_characters_count_as_four_bytes():
    text = "😀" * 10  # 10 characters, 40 bytes
    assert truncate(text, OutputLimit(lines=5, bytes=40)) == (text, None)
    assert truncate(text, OutputLimit(lines=5, bytes=39))[1] is not None
    assert truncate(text, OutputLimit(lines=5, bytes=21))[1] is not None
