"""web_fetch against a real HTTP server on 127.0.0.1 (allowed explicitly): conversion, types, limits."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from crab import ToolResult

if TYPE_CHECKING:
    from conftest import WebServer

Call = Callable[..., ToolResult]


def body_of(result: ToolResult) -> str:
    """The text between the web-content fence markers."""
    match = re.search(r"<<<web-content ([0-9a-f]+)>>>\n(.*)\n<<<end web-content \1>>>", result.content, re.S)
    assert match, result.content
    return match.group(2)


def test_html_becomes_markdown_with_headings_links_and_code(web: WebServer, call: Call) -> None:
    result = call("web_fetch", url=web.url("/page.html"))
    assert not result.is_error, result.content
    text = body_of(result)
    assert "# Main heading" in text
    assert "## Second heading" in text
    assert f"[the intro](http://127.0.0.1:{web.port}/docs/intro.html)" in text  # made absolute
    assert "[elsewhere](https://example.org/x)" in text
    assert "```python\ndef answer():\n    return 42\n```" in text
    assert "- first item" in text
    assert "Title: The Test Page" in text


def test_noise_and_hidden_text_are_dropped(web: WebServer, call: Call) -> None:
    text = body_of(call("web_fetch", url=web.url("/page.html")))
    for noise in ("SCRIPT-NOISE", "color: red", "NAV-NOISE", "FOOTER-NOISE", "HIDDEN-INSTRUCTION", "HIDDEN-ATTR"):
        assert noise not in text


def test_result_is_labelled_as_web_content_with_the_url(web: WebServer, call: Call) -> None:
    result = call("web_fetch", url=web.url("/page.html"))
    first = result.content.splitlines()[0]
    assert web.url("/page.html") in first
    assert "not from the user" in first
    assert result.details["url"] == web.url("/page.html")


def test_fence_cannot_be_closed_by_the_page(web: WebServer, call: Call) -> None:
    one = re.findall(r"<<<web-content ([0-9a-f]+)>>>", call("web_fetch", url=web.url("/plain.txt")).content)
    two = re.findall(r"<<<web-content ([0-9a-f]+)>>>", call("web_fetch", url=web.url("/plain.txt")).content)
    assert one and two and one != two  # a fresh id each time: a page cannot guess the closing marker


def test_plain_text_and_json_come_back_as_text(web: WebServer, call: Call) -> None:
    assert body_of(call("web_fetch", url=web.url("/plain.txt"))) == "just some plain text\nline two"
    assert body_of(call("web_fetch", url=web.url("/data.json"))) == '{"a": 1}'


def test_declared_charset_is_honoured(web: WebServer, call: Call) -> None:
    assert body_of(call("web_fetch", url=web.url("/latin1.txt"))) == "café au lait"


@pytest.mark.parametrize("kind", ["plain", "html"])
@pytest.mark.parametrize("charset", ["rot13", "zlib", "base64", "hex", "idna", "undefined", "no-such-charset"])
def test_a_charset_that_is_no_text_encoding_counts_as_unknown(
    web: WebServer, call: Call, kind: str, charset: str
) -> None:
    # codecs.lookup knows these, but they turn bytes into bytes (or take no error handler):
    # decoding with one ended the call with core's "web_fetch failed: LookupError"
    result = call("web_fetch", url=web.url(f"/charset/{kind}/{charset}"))
    assert not result.is_error, result.content
    assert body_of(result) == "plain words"


def test_deeply_nested_html_still_yields_its_text(web: WebServer, call: Call, settings: dict[str, Any]) -> None:
    # 5,000 nested elements: markdownify recursed once per level and the call ended with core's
    # "web_fetch failed: RecursionError"; past MAX_DEPTH the text is kept as plain text
    settings["max_chars"] = settings["default_max_chars"] = 100_000
    result = call("web_fetch", url=web.url("/deep.html"))
    assert not result.is_error, result.content
    text = body_of(result)
    assert re.findall(r"\blevel(\d+)\b", text) == [str(n) for n in range(5_000)]  # every level, in order
    assert "DEEP-HIDDEN" not in text  # a hidden element stays hidden, however deep


def test_links_that_are_no_url_are_kept_as_text(web: WebServer, call: Call) -> None:
    # urljoin raises ValueError on "http://[::1": the call ended with core's "web_fetch failed"
    result = call("web_fetch", url=web.url("/broken-links.html"))
    assert not result.is_error, result.content
    assert body_of(result) == f"broken, [image: pic] and [fine]({web.url('/fine')})"


def test_gzip_body_is_decoded(web: WebServer, call: Call) -> None:
    assert "# Zipped heading" in body_of(call("web_fetch", url=web.url("/gzip.html")))


def test_unlabelled_html_is_sniffed(web: WebServer, call: Call) -> None:
    assert "# Sniffed" in body_of(call("web_fetch", url=web.url("/unlabelled.html")))


@pytest.mark.parametrize("path", ["/image.png", "/unlabelled.bin"])
def test_binary_is_refused_with_a_clear_message(web: WebServer, call: Call, path: str) -> None:
    result = call("web_fetch", url=web.url(path))
    assert result.is_error
    assert "not text" in result.content and "HTML and text" in result.content
    assert "PNG" not in result.content


def test_redirect_chain_is_followed(web: WebServer, call: Call) -> None:
    result = call("web_fetch", url=web.url("/chain/3"))
    assert not result.is_error, result.content
    assert "# Main heading" in body_of(result)
    assert f"{web.url('/page.html')} (redirected from {web.url('/chain/3')})" in result.content


def test_too_many_redirects_stop(web: WebServer, call: Call, settings: dict[str, Any]) -> None:
    settings["max_redirects"] = 2
    result = call("web_fetch", url=web.url("/chain/3"))
    assert result.is_error and "more than 2 times" in result.content
    assert call("web_fetch", url=web.url("/loop")).is_error


def test_redirect_to_another_scheme_is_refused(web: WebServer, call: Call) -> None:
    result = call("web_fetch", url=web.url("/to-file"))
    assert result.is_error and "not an http or https URL" in result.content


def test_error_status_is_reported(web: WebServer, call: Call) -> None:
    result = call("web_fetch", url=web.url("/missing"))
    assert result.is_error and "HTTP 404" in result.content


def test_slow_response_times_out(web: WebServer, call: Call, settings: dict[str, Any]) -> None:
    settings["read_timeout"] = 0.3
    result = call("web_fetch", url=web.url("/slow"))
    assert result.is_error
    assert "timed out" in result.content and "read_timeout" in result.content


def test_total_timeout_bounds_the_call(web: WebServer, call: Call, settings: dict[str, Any]) -> None:
    settings["read_timeout"] = 60.0
    settings["total_timeout"] = 0.5
    result = call("web_fetch", url=web.url("/slow"))
    assert result.is_error and "total_timeout" in result.content


def test_huge_page_stops_at_the_download_cap(web: WebServer, call: Call, settings: dict[str, Any]) -> None:
    settings["max_bytes"] = 100_000
    settings["max_chars"] = 100_000
    result = call("web_fetch", url=web.url("/huge.html"), max_chars=100_000)
    assert not result.is_error, result.content
    assert "download stopped at 100,000 bytes" in result.content
    text = body_of(result)
    assert 500 < text.count("x" * 93) <= 100_000 // 100 + 1


_MEASURE = """
import asyncio, json, sys, tracemalloc
from pathlib import Path
from crab import ToolContext
from crab.tools import run_tool
from crab_tools_web.tools import build_tools

settings, url, workspace = json.loads(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
tool = {t.name: t for t in build_tools(settings)}["web_fetch"]
context = ToolContext(session_id="test-session", workspace=workspace, settings=settings)
asyncio.run(run_tool(tool, {"url": url}, context))  # imports and first-use caches, outside the measure
tracemalloc.start()
result = asyncio.run(run_tool(tool, {"url": url}, context))
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"peak": peak, "error": result.is_error, "content": result.content, "details": result.details}))
"""


def _peak_bytes(url: str, settings: dict[str, Any], workspace: Path) -> tuple[dict[str, Any], int]:
    """The fetch's result and the bytes it allocated at its peak, measured in a process of its
    own: tracemalloc counts every thread of a process, and in this one the test server's (and
    whatever else runs beside the test) would count too."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, json.dumps(settings), url, str(workspace)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    return seen, seen["peak"]


@pytest.mark.parametrize("path", ["/bomb.txt", "/bomb2.txt"])
def test_compression_bomb_is_never_expanded_past_the_cap(
    web: WebServer, settings: dict[str, Any], path: str, bombs: None, tmp_path: Path
) -> None:
    # A page of a few KB that gzip (once, or twice with "Content-Encoding: gzip, gzip") expands
    # to 64 MiB: the download cap must bound what is decompressed, not only what is kept.
    settings["max_bytes"] = 100_000
    result, peak = _peak_bytes(web.url(path), settings, tmp_path)
    assert peak < 16 * 1024 * 1024, f"{peak:,} bytes allocated for a 100,000-byte cap"
    if path == "/bomb.txt":
        assert not result["error"], result["content"]
        assert result["details"]["total"] == 100_000  # the cap's worth of text, and no more
    else:
        assert result["error"] and "gzip, gzip" in result["content"], result["content"]


def test_endless_empty_deflate_blocks_stop_at_the_download_cap(
    web: WebServer, call: Call, settings: dict[str, Any]
) -> None:
    # They inflate to nothing, so a cap on inflated bytes alone never ends the download: it ran
    # until total_timeout, gigabytes later. The bytes received count against max_bytes too.
    settings["max_bytes"] = 100_000
    settings["total_timeout"] = 60.0
    result = call("web_fetch", url=web.url("/empty-blocks.txt"))
    assert not result.is_error, result.content
    assert "download stopped at 100,000 bytes" in result.content


def test_the_download_stops_where_the_gzip_stream_ends(web: WebServer, call: Call, settings: dict[str, Any]) -> None:
    # Bytes after the end of the member are no part of the page; reading on kept them in zlib's
    # unused_data (copied on every chunk) until the cap or total_timeout.
    settings["total_timeout"] = 60.0
    result = call("web_fetch", url=web.url("/after-the-end.txt"))
    assert not result.is_error, result.content
    assert body_of(result) == "the whole page"
    assert "download stopped" not in result.content


def test_unrequested_content_encoding_is_refused(web: WebServer, call: Call) -> None:
    result = call("web_fetch", url=web.url("/brotli.txt"))
    assert result.is_error and "Content-Encoding br" in result.content, result.content


def test_long_page_is_cut_with_a_note_and_read_on(web: WebServer, call: Call) -> None:
    first = call("web_fetch", url=web.url("/long.txt"), max_chars=1000)
    assert not first.is_error
    note = re.search(r"start=(\d+) to read on", first.content)
    assert note, first.content
    start = int(note.group(1))
    assert body_of(first).endswith("line 00089")  # cut at a line break
    requests_before = len(web.seen)
    second = call("web_fetch", url=web.url("/long.txt"), max_chars=1000, start=start)
    assert body_of(second).startswith("line 00090")
    assert len(web.seen) == requests_before  # read on from the session's copy, not downloaded again
    past = call("web_fetch", url=web.url("/long.txt"), start=10_000_000)
    assert past.is_error and "past the end" in past.content


def test_max_chars_is_capped_by_config(web: WebServer, call: Call, settings: dict[str, Any]) -> None:
    settings["max_chars"] = 200
    settings["default_max_chars"] = 100
    result = call("web_fetch", url=web.url("/long.txt"), max_chars=1_000_000)
    assert len(body_of(result)) <= 200


def test_bad_arguments_are_one_line(web: WebServer, call: Call) -> None:
    result = call("web_fetch", url=web.url("/plain.txt"), max_chars=0)
    assert result.is_error and "max_chars" in result.content
