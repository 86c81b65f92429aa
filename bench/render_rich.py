"""Benchmark: crab-render-rich's cost per streamed token, against a fast model's pace.

Run as ``.venv/bin/python bench/render_rich.py [--tokens 1000,10000] [--repeat 3]``. A Markdown
answer with paragraphs, lists and code blocks is cut into ~4-character tokens and fed to the
renderer as ``TextDelta`` events, on a 100x40 terminal console writing to memory. The cost of a
token is what ``handle`` takes (splitting blocks, printing each completed block once) plus its
share of live-area redraws: the live area (the block being written) is redrawn at most
``REFRESH_PER_SECOND`` times a second, whatever the token rate, so at 200 tokens/s each token
carries 12/200 of one redraw, measured here at the tail sizes the stream actually had.

Targets: under 5 % of a 200 tokens/s stream's time (5 ms a token), and no quadratic growth (the
time per token at 10k tokens about that at 1k). For contrast, the naive way (re-render the
whole message as Markdown on every token) is measured at the smallest size.
"""

from __future__ import annotations

import argparse
import io
import statistics
import time

import crab
from crab_render_rich.renderer import Preferences, RichRenderer
from crab_render_rich.screen import REFRESH_PER_SECOND, TerminalScreen
from crab_render_rich.view import markdown
from rich.console import Console

RATE = 200.0
TARGET = 0.05
PARAGRAPH = (
    "The loop streams **tokens** as they come, and the renderer shows them as `Markdown` without "
    "re-rendering what is already on screen; each finished block goes to the scrollback once. "
)
CODE = "```python\ndef handle(event):\n    if isinstance(event, TextDelta):\n        return feed(event.text)\n```\n\n"
LIST = "- first point with *emphasis*\n- second point with a [link](https://example.org)\n\n"


def answer(tokens: int) -> list[str]:
    """A Markdown answer cut into ``tokens`` pieces of about four characters."""
    parts: list[str] = []
    i = 0
    while sum(len(p) for p in parts) < tokens * 4:
        parts.append(f"## Section {i}\n\n" if i % 6 == 0 else "")
        parts.append(PARAGRAPH * 2 + "\n\n")
        parts.append(CODE if i % 2 else LIST)
        i += 1
    text = "".join(parts)[: tokens * 4]
    return [text[j : j + 4] for j in range(0, len(text), 4)]


def console() -> Console:
    return Console(file=io.StringIO(), width=100, height=40, force_terminal=True, color_system="truecolor")


def stream(tokens: list[str]) -> tuple[float, list[int]]:
    """Seconds ``handle`` took for every token, and the live tail's length after each token."""
    target = crab.rendering.RenderTarget(io.StringIO(), io.StringIO(), color=True, model="bench")
    renderer = RichRenderer(target, TerminalScreen(console(), live_area=False), Preferences())
    renderer.handle(crab.events.TurnStarted("s", "t", "bench"))
    tails: list[int] = []
    started = time.perf_counter()
    for token in tokens:
        renderer.handle(crab.events.TextDelta(token))
        tails.append(len(renderer.blocks.tail))
    elapsed = time.perf_counter() - started
    renderer.handle(crab.events.TurnEnded("s", "t", "end"))
    renderer.close()
    return elapsed, tails


def redraw_cost(tokens: list[str], samples: int = 60) -> float:
    """Mean seconds of one live-area redraw, sampled evenly along the stream."""
    target = crab.rendering.RenderTarget(io.StringIO(), io.StringIO(), color=True)
    renderer = RichRenderer(target, TerminalScreen(console(), live_area=False), Preferences())
    draw = console()
    every = max(1, len(tokens) // samples)
    costs: list[float] = []
    for n, token in enumerate(tokens):
        renderer.handle(crab.events.TextDelta(token))
        if n % every == 0 and renderer.blocks.tail.strip():
            started = time.perf_counter()
            draw.print(renderer.area)
            costs.append(time.perf_counter() - started)
            draw.file = io.StringIO()
    renderer.close()
    return statistics.mean(costs) if costs else 0.0


def naive(tokens: list[str]) -> float:
    """Seconds a token costs when the whole message is re-rendered as Markdown on each token."""
    draw = console()
    text = ""
    started = time.perf_counter()
    for token in tokens:
        text += token
        draw.print(markdown(text))
        draw.file = io.StringIO()
    return (time.perf_counter() - started) / len(tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", default="1000,10000", help="comma list of stream lengths")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(n) for n in args.tokens.split(",")]
    budget = 1.0 / RATE
    print(f"render cost per token vs a {RATE:.0f} tokens/s stream ({budget * 1000:.1f} ms a token); target < 5 %")
    print(
        f"{'tokens':>8} {'handle µs/tok':>14} {'redraw µs':>10} {'share µs/tok':>13} {'total µs/tok':>13} {'% of stream':>12}"
    )
    per_token: dict[int, float] = {}
    for size in sizes:
        tokens = answer(size)
        handle = min(stream(tokens)[0] for _ in range(args.repeat)) / len(tokens)
        redraw = redraw_cost(tokens)
        share = redraw * REFRESH_PER_SECOND / RATE
        total = handle + share
        per_token[size] = total
        print(
            f"{len(tokens):>8} {handle * 1e6:>14.1f} {redraw * 1e6:>10.0f} {share * 1e6:>13.1f} "
            f"{total * 1e6:>13.1f} {100 * total / budget:>11.2f}%"
        )
    if len(sizes) > 1:
        small, large = min(sizes), max(sizes)
        print(
            f"growth: per-token cost at {large} tokens / at {small} tokens = {per_token[large] / per_token[small]:.2f} "
            "(1.0 = linear; quadratic would be ~" + f"{large / small:.0f})"
        )
    small_tokens = answer(min(min(sizes), 1000))
    print(
        f"contrast: re-rendering the whole message per token at {len(small_tokens)} tokens: "
        f"{naive(small_tokens) * 1e6:.0f} µs/token"
    )


if __name__ == "__main__":
    main()
