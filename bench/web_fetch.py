"""web_fetch benchmark: fetch-and-convert of a 2 MB HTML page served on 127.0.0.1, against the
same conversion done by the library alone (crab-tools-web).

Rows, side by side in one run:

- library alone: ``BeautifulSoup(html, "html.parser")`` + ``markdownify.MarkdownConverter``
  (ATX headings) on the page's bytes, already in memory: the floor;
- plugin conversion: ``crab_tools_web.convert.html_to_markdown`` on the same bytes (noise and
  hidden-element removal, absolute links): what the plugin adds to the conversion;
- web_fetch tool: the whole tool call as the loop runs it: seatbelt check, HTTP GET over
  127.0.0.1 (streamed, capped), conversion, slicing and the web-content fence.

Figures: fastest and median wall time of ``--runs`` interleaved runs, and peak traced memory
(``tracemalloc``, in a separate run so tracing does not distort the times); ratios are to the
first row.

    python bench/web_fetch.py [--size-mb 2] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import statistics
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any


def make_page(size: int) -> bytes:
    """A documentation-like HTML page of about ``size`` bytes: nav, headings, prose, links, code, lists."""
    head = (
        "<!doctype html><html><head><title>Bench page</title><style>body{font:14px sans-serif}</style>"
        "<script>var tracking = 1;</script></head><body><nav><a href='/'>Home</a> <a href='/docs'>Docs</a></nav><main>"
    )
    parts = [head]
    n = 0
    total = len(head)
    while total < size:
        n += 1
        section = (
            f"<h2 id='s{n}'>Section {n}</h2>"
            f"<p>Paragraph {n} explains <a href='/docs/page{n}.html'>a linked page</a> with <em>emphasis</em>, "
            f"<strong>strong words</strong> and <code>inline_code({n})</code>. "
            + "Lorem ipsum dolor sit amet, consectetur adipiscing elit. "
            * 4
            + "</p>"
            f"<pre><code class='language-python'>def f{n}(x):\n    return x * {n}\n</code></pre>"
            "<ul><li>first point</li><li>second point with <a href='https://example.org/'>a link</a></li></ul>"
            "<table><tr><th>key</th><th>value</th></tr><tr><td>a</td><td>1</td></tr></table>"
        )
        parts.append(section)
        total += len(section)
    parts.append("</main><footer>footer</footer></body></html>")
    return "".join(parts).encode()


def serve(page: bytes) -> tuple[http.server.ThreadingHTTPServer, int]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return None

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, httpd.server_address[1]


def library_alone(page: bytes) -> Callable[[], int]:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    def run() -> int:
        soup = BeautifulSoup(page, "html.parser")
        return len(MarkdownConverter(heading_style="ATX").convert_soup(soup))

    return run


def plugin_conversion(page: bytes) -> Callable[[], int]:
    from crab_tools_web.convert import html_to_markdown

    def run() -> int:
        return len(html_to_markdown(page, "utf-8", "http://127.0.0.1/").text)

    return run


def web_fetch_tool(port: int, workspace: Path) -> Callable[[], int]:
    from crab import ToolContext
    from crab.tools import run_tool
    from crab_tools_web.tools import build_tools

    settings = {"allow_hosts": ["127.0.0.1"], "max_bytes": 50_000_000, "total_timeout": 120, "read_timeout": 60}
    tool = {t.name: t for t in build_tools(settings)}["web_fetch"]
    url = f"http://127.0.0.1:{port}/page.html"

    def run() -> int:
        ctx = ToolContext(session_id="bench", workspace=workspace, settings=settings)  # fresh: no cache
        result = asyncio.run(run_tool(tool, {"url": url}, ctx))
        assert not result.is_error, result.content
        return int(result.details["total"])

    return run


def measure(rows: list[tuple[str, Callable[[], int]]], runs: int) -> list[tuple[float, float, float, int]]:
    """Per row: (fastest seconds, median seconds, peak traced MB, output characters).

    Rows run interleaved, run by run, so a busy machine slows them alike; the fastest run is the
    least disturbed figure. Memory is traced in a separate run so tracing does not distort times.
    """
    for _, fn in rows:
        fn()  # warm up imports and caches
    times: list[list[float]] = [[] for _ in rows]
    chars = [0 for _ in rows]
    for _ in range(runs):
        for index, (_, fn) in enumerate(rows):
            start = time.perf_counter()
            chars[index] = fn()
            times[index].append(time.perf_counter() - start)
    results = []
    for index, (_, fn) in enumerate(rows):
        tracemalloc.start()
        fn()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        results.append((min(times[index]), statistics.median(times[index]), peak / 1e6, chars[index]))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=2.0)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    page = make_page(int(args.size_mb * 1_000_000))
    httpd, port = serve(page)
    rows = [
        ("library alone (bs4 + markdownify)", library_alone(page)),
        ("plugin conversion (html_to_markdown)", plugin_conversion(page)),
        ("web_fetch tool (HTTP + seatbelt + convert)", web_fetch_tool(port, Path.cwd())),
    ]
    print(f"page: {len(page) / 1e6:.2f} MB of HTML on 127.0.0.1, {args.runs} interleaved runs")
    print(f"{'':44} {'fastest':>9} {'ratio':>7} {'median':>9} {'ratio':>7} {'peak MB':>8} {'ratio':>7} {'chars':>10}")
    results = measure(rows, args.runs)
    fast0, median0, peak0, _ = results[0]
    for (name, _), (fast, median, peak, chars) in zip(rows, results, strict=True):
        print(
            f"{name:44} {fast:8.3f}s {fast / fast0:6.2f}x {median:8.3f}s {median / median0:6.2f}x "
            f"{peak:8.1f} {peak / peak0:6.2f}x {chars:10,}"
        )
    httpd.shutdown()
    httpd.server_close()


if __name__ == "__main__":
    main()
