"""SSE decoder: framing rules, and chunk boundaries anywhere in the byte stream."""

from __future__ import annotations

from crab_provider_kit import ServerSentEvent, SSEDecoder


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


def test_flush_dispatches_complete_lines_but_drops_a_cut_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"done": true}\n') == []
    assert decoder.flush() == [ServerSentEvent('{"done": true}')]

    cut = SSEDecoder()
    assert cut.feed(b'data: {"half": tr') == []
    assert cut.flush() == []


def test_nothing_left_to_flush_after_a_clean_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\n") == [ServerSentEvent("a")]
    assert decoder.flush() == []
