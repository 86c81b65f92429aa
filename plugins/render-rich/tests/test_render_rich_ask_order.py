"""crab-render-rich shows a tool call before the permission question about it (issue 42 item 7):
when the question reaches whoever answers it, the chat screen's live area already shows the call
running, for a provider that streams its calls and for one whose calls come only with its reply."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from itertools import count
from pathlib import Path

import crab
import pytest
from crab.testing import ScriptedProvider
from crab_render_rich.renderer import Preferences, RichRenderer
from crab_render_rich.screen import TerminalScreen
from rich.console import Console

QUIET = {"user_config": False, "project_config": False, "environment": False}
SCRIPT = [
    [{"tool": "save", "args": {"text": "first"}, "id": "call_a"}],
    [{"text": "Saving again.\n\n"}, {"tool": "save", "args": {"text": "second"}, "id": "call_b"}],
    [{"text": "done"}],
]


class Unstreamed(ScriptedProvider):
    """A provider that streams no ``ToolCallEvent``: its calls come only in the final message."""

    async def stream(self, request: crab.ModelRequest) -> AsyncIterator[crab.events.StreamEvent]:
        async for event in super().stream(request):
            if not isinstance(event, crab.events.ToolCallEvent):
                yield event


@crab.tool(permission="write")
def save(text: str) -> str:
    """Save ``text``."""
    return f"saved {text}"


def live_area(renderer: RichRenderer) -> str:
    """What the chat screen's live area (above the question) shows now, as text."""
    probe = Console(file=io.StringIO(), width=80, force_terminal=True, record=True)
    probe.print(renderer.area)
    return probe.export_text()


@pytest.mark.parametrize("streams_calls", [True, False], ids=["streamed", "unstreamed"])
def test_render_rich_shows_the_call_before_its_question(crab_home: Path, streams_calls: bool) -> None:
    file = io.StringIO()
    term = Console(file=file, width=80, force_terminal=True, record=True)
    target = crab.rendering.RenderTarget(file, file, color=False, model="m")
    ticks = count(0, 1)
    renderer = RichRenderer(target, TerminalScreen(term, live_area=False), Preferences(), lambda: next(ticks))
    shown_when_asked: dict[str, str] = {}

    def ask(request: crab.PermissionRequest) -> str:
        shown_when_asked[request.call_id] = live_area(renderer)
        return "once"

    provider = ScriptedProvider(SCRIPT) if streams_calls else Unstreamed(SCRIPT)
    with crab.Agent(provider=provider, tools=[save], plugins=[], ask=ask, renderer=renderer, **QUIET) as agent:
        result = agent.run_sync("save twice")
    assert result.text == "done"
    assert list(shown_when_asked) == ["call_a", "call_b"]
    assert "save text=first" in shown_when_asked["call_a"], shown_when_asked
    assert "save text=second" in shown_when_asked["call_b"], shown_when_asked
    # The reply's text before the second call was written out before the call and its question.
    text = term.export_text()
    assert text.index("Saving again.") < text.index("✓ save text=second"), text
