"""The <think> tag splitter: tags anywhere in the delta stream, and text that only looks like one."""

from __future__ import annotations

from crab_provider_openai.thinktags import ThinkTagSplitter


def split(*deltas: str) -> tuple[str, str]:
    splitter = ThinkTagSplitter()
    pieces = [p for d in deltas for p in splitter.feed(d)] + splitter.flush()
    return "".join(t for thinking, t in pieces if thinking), "".join(t for thinking, t in pieces if not thinking)


def test_every_split_of_a_tagged_reply() -> None:
    reply = "<think>plan it</think>\n\nanswer"
    for cut in range(len(reply) + 1):
        assert split(reply[:cut], reply[cut:]) == ("plan it", "answer"), cut
    assert split(*reply) == ("plan it", "answer")


def test_plain_text_passes_through_and_later_tags_are_text() -> None:
    assert split("Hello", " <think>x</think>") == ("", "Hello <think>x</think>")


def test_leading_whitespace_before_the_tag_is_allowed() -> None:
    assert split("\n", "<think>a</think>b") == ("a", "b")


def test_text_that_starts_like_a_tag_but_is_not() -> None:
    assert split("<th", "ese are words") == ("", "<these are words")
    assert split("<") == ("", "<")


def test_unclosed_thought_stays_thinking() -> None:
    assert split("<think>still going </thi") == ("still going </thi", "")
