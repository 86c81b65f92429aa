"""Markdown to Telegram HTML and splitting under the limit (pure functions)."""

from __future__ import annotations

from crab_telegram.access import allowed, bad_entries
from crab_telegram.format import LIMIT, block_html, plain_pieces, split_message, units
from crab_telegram.incoming import address_of, command_target, command_text, parse_address
from hypothesis import given, settings
from hypothesis import strategies as st


def test_markdown_becomes_escaped_html() -> None:
    html = block_html("**bold** and *it* and `a<b>` and [site](https://example.org/?a=1&b=2) <script>")
    assert html == (
        '<b>bold</b> and <i>it</i> and <code>a&lt;b&gt;</code> and <a href="https://example.org/?a=1&amp;b=2">site</a>'
        " &lt;script&gt;"
    )


def test_a_link_to_anything_but_http_stays_text() -> None:
    assert "<a" not in block_html("[x](javascript:alert(1))")


def test_a_code_block_keeps_its_content_verbatim() -> None:
    html = block_html("```python\nif a < b and c > d:\n    print('**not bold**')\n```")
    assert html == (
        "<pre><code class=\"language-python\">if a &lt; b and c &gt; d:\n    print('**not bold**')</code></pre>"
    )


def test_short_text_is_one_message() -> None:
    pieces = split_message("hello\n\nworld")
    assert [p.html for p in pieces] == ["hello\n\nworld"]


def test_paragraphs_are_never_cut_when_they_fit() -> None:
    paragraphs = [f"p{i} " + "x" * 1000 for i in range(10)]
    pieces = split_message("\n\n".join(paragraphs))
    assert len(pieces) > 2
    for piece in pieces:
        assert units(piece.html) <= LIMIT
        for part in piece.plain.split("\n\n"):
            assert part in paragraphs


def test_a_huge_code_block_becomes_several_closed_blocks() -> None:
    code = "```\n" + "\n".join(f"line <{i}>" for i in range(2000)) + "\n```"
    pieces = split_message(code)
    assert len(pieces) > 1
    for piece in pieces:
        assert units(piece.html) <= LIMIT
        assert piece.html.startswith("<pre>") and piece.html.endswith("</pre>")
    assert "".join(p.html for p in pieces).count("line &lt;1999&gt;") == 1


def test_emoji_count_as_two_units() -> None:
    pieces = split_message("😀" * 5000)
    assert len(pieces) >= 3
    assert all(units(p.html) <= LIMIT for p in pieces)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab <>&*_`[]()\n#~😀")), max_size=12000))
def test_every_piece_fits_and_nothing_is_lost(text: str) -> None:
    pieces = split_message(text)
    for piece in pieces:
        assert 0 < units(piece.html) <= LIMIT
    kept = "".join(p.plain for p in pieces)
    assert "".join(kept.split()) == "".join(" ".join(t for t in text.split("\n") if t.strip()).split())


def test_allow_from_semantics() -> None:
    assert not allowed([], 1, 1)
    assert allowed(["*"], 5, 5)
    assert allowed(["5"], 5, 9)
    assert allowed(["-100"], 5, -100)
    assert not allowed(["5"], "5", None)  # ids are numbers in updates; anything else is no one
    assert bad_entries(["123", "-5", "*", "@ada", "12a"]) == ["@ada", "12a"]


def test_addresses_and_commands() -> None:
    assert address_of(-100, 7, True) == "-100:7"
    assert address_of(42, 7, False) == "42"  # a reply thread, not a topic
    assert parse_address("-100:7") == (-100, 7)
    assert command_text("/help@crab_bot more") == "/help more"
    assert command_text("hello@there") == "hello@there"
    assert command_target("/help@SomeOtherBot now") == "SomeOtherBot"
    assert command_target("/help") is None and command_target("mail me@example.org") is None


def test_a_long_unbroken_line_is_cut_only_where_a_message_ends() -> None:
    # A URL or base64 blob longer than a message: the messages, joined, are the line itself;
    # no newline is put inside it (it used to get one every 682 characters).
    blob = "".join(chr(65 + (i * 7) % 26) for i in range(10_000))
    url = "https://example.org/download?token=" + blob
    pieces = split_message(url)
    assert len(pieces) == 3
    assert all(units(p.html) <= LIMIT for p in pieces)
    assert "".join(p.plain for p in pieces) == url
    code = split_message(f"```\n{blob}\n```")
    assert all(units(p.html) <= LIMIT for p in code)
    inside = "".join(p.plain.removeprefix("```\n").removesuffix("\n```") for p in code)
    assert inside == blob


def test_plain_text_keeps_a_long_line_whole_but_for_the_message_ends() -> None:
    blob = "x" * 5000
    pieces = plain_pieces(f"short line\n{blob}\nlast")
    assert all(units(p) <= LIMIT for p in pieces)
    assert pieces == ["short line", "x" * 4096, "x" * 904 + "\nlast"]  # cut inside the line only at a message end
