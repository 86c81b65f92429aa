"""SSE decoder: framing rules, and chunk boundaries anywhere in the byte stream."""

from __future__ import annotations

import pytest
from crab_provider_kit import ServerSentEvent, SSEDecoder
from hypothesis import given, settings
from hypothesis import strategies as st


def decode_all(data: bytes, size: int) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events: list[ServerSentEvent] = []
    for start in range(0, len(data), size):
        events.extend(decoder.feed(data[start : start + size]))
    events.extend(decoder.flush())
    return events


STREAM = (
    b": keep-alive comment\n"
    b"event: message_start\n"
    b'data: {"a": 1}\n'
    b"\n"
    b"data: first line\n"
    b"data:second line\n"
    b"id: 7\n"
    b"retry: 1500\n"
    b"\n"
    b"data: caf\xc3\xa9 \xe2\x9c\x93\n"
    b"\n"
    b"data: [DONE]\n"
    b"\n"
)


def test_fields_comments_and_multiline_data() -> None:
    events = decode_all(STREAM, len(STREAM))
    assert events == [
        ServerSentEvent('{"a": 1}', "message_start"),
        ServerSentEvent("first line\nsecond line", "message", "7", 1500),
        ServerSentEvent("café ✓", "message", "7", 1500),
        ServerSentEvent("[DONE]", "message", "7", 1500),
    ]


def test_every_chunk_size_gives_the_same_events() -> None:
    expected = decode_all(STREAM, len(STREAM))
    for size in range(1, 12):
        assert decode_all(STREAM, size) == expected, size


def test_crlf_and_cr_line_ends_even_when_split_between_chunks() -> None:
    lf = b"event: x\ndata: 1\n\ndata: 2\n\n"
    crlf = lf.replace(b"\n", b"\r\n")
    cr = lf.replace(b"\n", b"\r")
    expected = decode_all(lf, 100)
    assert [e.data for e in expected] == ["1", "2"]
    for size in range(1, 8):
        assert decode_all(crlf, size) == expected
        assert decode_all(cr, size) == expected


def test_event_type_resets_after_dispatch() -> None:
    events = decode_all(b"event: ping\ndata: {}\n\ndata: plain\n\n", 4)
    assert [(e.event, e.data) for e in events] == [("ping", "{}"), ("message", "plain")]


def test_bom_is_dropped_and_unknown_fields_ignored() -> None:
    events = decode_all(b"\xef\xbb\xbfdata: x\nfoo: bar\nretry: soon\n\n", 2)
    assert events == [ServerSentEvent("x")]


def test_event_without_data_is_not_dispatched() -> None:
    assert decode_all(b"event: lonely\n\ndata: y\n\n", 3) == [ServerSentEvent("y")]


def test_an_event_without_its_blank_line_is_discarded_at_the_end() -> None:
    """The spec: "any pending data must be discarded"; the openai SDK's decoder does the same."""
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"done": true}\n') == []
    assert decoder.flush() == []

    cut = SSEDecoder()
    assert cut.feed(b'data: {"half": tr') == []
    assert cut.flush() == []


def test_a_complete_event_before_a_pending_one_is_kept() -> None:
    for end in (b"\n", b"\r", b"\r\n"):
        stream = b"data: a" + end + end + b"data: b" + end
        assert decode_all(stream, 1) == [ServerSentEvent("a")], end


def test_two_data_lines_at_the_end_of_the_stream_give_no_event() -> None:
    """Issue 32: ``data: a\ndata: b\r`` gave ``[a]``, half of an event the server never finished."""
    assert decode_all(b"data: a\ndata: b\r", 100) == []
    assert decode_all(b"data: a\ndata: b\r", 1) == []


@pytest.mark.parametrize(
    ("stream", "data"),
    [(b"data: a\r\r", "a"), (b"data: a\n\r", "a"), (b"data: a\r\n\r", "a"), (b"data: a\rdata: b\r\r", "a\nb")],
)
def test_a_lone_cr_at_the_very_end_ends_the_event(stream: bytes, data: str) -> None:
    """The last CR is held in case an LF follows; at the end it is a line end like any other."""
    for size in (1, 2, len(stream)):
        assert decode_all(stream, size) == [ServerSentEvent(data)], size


@pytest.mark.parametrize("value", ["\u00b2", "\u0661\u0662\u0663", "\uff11\uff12", "12a", "1.5", "-5", " 7", ""])
def test_retry_counts_only_ascii_digits(value: str) -> None:
    """``retry: ²`` raised ValueError (one hostile byte ended the stream); ``retry: ١٢٣`` was taken."""
    stream = f"retry: {value}\ndata: x\n\n".encode()
    assert decode_all(stream, 3) == [ServerSentEvent("x")]


def test_retry_with_ascii_digits_is_kept_and_an_absurdly_long_one_ignored() -> None:
    assert decode_all(b"retry: 0042\ndata: x\n\n", 5) == [ServerSentEvent("x", retry=42)]
    huge = b"retry: " + b"9" * 5000 + b"\ndata: x\n\n"
    assert decode_all(huge, 64) == [ServerSentEvent("x")]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(min_value=1, max_value=40))
def test_arbitrary_bytes_never_raise_and_chunking_does_not_matter(data: bytes, size: int) -> None:
    assert decode_all(data, size) == decode_all(data, max(len(data), 1))


FIELD_TEXT = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=20)
LINE = st.one_of(
    st.builds(lambda v: f"data: {v}", FIELD_TEXT),
    st.builds(lambda v: f"retry: {v}", FIELD_TEXT),
    st.builds(lambda v: f"event: {v}", FIELD_TEXT),
    st.builds(lambda v: f"id: {v}", FIELD_TEXT),
    st.builds(lambda v: f": {v}", FIELD_TEXT),
    st.just(""),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(LINE, max_size=12), st.integers(min_value=1, max_value=16))
def test_lf_crlf_and_cr_line_ends_give_the_same_events(lines: list[str], size: int) -> None:
    lf = "".join(line + "\n" for line in lines).encode()
    expected = decode_all(lf, len(lf) or 1)
    assert decode_all(lf.replace(b"\n", b"\r\n"), size) == expected
    assert decode_all(lf.replace(b"\n", b"\r"), size) == expected
    # Only blank lines dispatch: as many events as blank lines that follow a data line.
    assert len(expected) <= lines.count("")


def test_nothing_left_to_flush_after_a_clean_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\n") == [ServerSentEvent("a")]
    assert decoder.flush() == []


def test_a_line_that_never_ends_stops_the_decoder_instead_of_filling_memory() -> None:
    """A server that streams bytes without a line end (or one event without its blank line)
    until the idle timeout must not make crab hold all of them."""
    chunk = b"x" * 65536
    decoder = SSEDecoder()
    for _ in range(33 * 16):  # 33 MiB, past the 32 MiB bound
        assert decoder.feed(chunk) == []
    assert decoder.overflow is not None and "a line" in decoder.overflow
    assert not decoder._buffer and decoder.feed(b"\n\ndata: later\n\n") == []
    endless = SSEDecoder()
    for _ in range(33 * 16):
        assert endless.feed(b"data: " + b"y" * 65530 + b"\n") == []
    assert endless.overflow is not None and "an event" in endless.overflow
    assert not endless._data


def test_a_long_line_in_many_chunks_is_still_one_line() -> None:
    decoder = SSEDecoder()
    events = [e for part in [b"data: ", b"ab" * 40000, b"c", b"\r", b"\n", b"\r\n"] for e in decoder.feed(part)]
    assert events == [ServerSentEvent("ab" * 40000 + "c")] and decoder.overflow is None
