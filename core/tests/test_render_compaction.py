"""The plain renderer shows each phase of a compaction as one progress line on stderr."""

from __future__ import annotations

import io

from crab._builtin.render_plain import PlainRenderer
from crab._contracts.events import CompactionEvent
from crab._contracts.renderers import RenderTarget


def lines(*events: CompactionEvent) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    renderer = PlainRenderer(RenderTarget(out=out, err=err))
    for event in events:
        renderer.handle(event)
    assert out.getvalue() == ""  # stdout carries only the answer
    return err.getvalue().splitlines()


def test_start_done_and_failed_lines() -> None:
    shown = lines(
        CompactionEvent("s", "start", "threshold", summarised=40, kept=6, tokens_before=9000),
        CompactionEvent("s", "done", "threshold", 40, 6, 9000, 2100, "summary"),
        CompactionEvent("s", "failed", "overflow", error="server down\x1b[2J"),
    )
    assert shown == [
        "compacting 40 older messages (the context is filling up)…",
        "compacted 40 messages into a summary, 6 kept verbatim (~9,000 → ~2,100 tokens)",
        "compaction failed: server down^[[2J",
    ]
