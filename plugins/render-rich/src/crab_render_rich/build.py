"""Choosing the screen for a run: a rich ``Live`` on a terminal, plain text otherwise."""

from __future__ import annotations

import os

from crab.rendering import RenderTarget

from crab_render_rich.renderer import RichRenderer
from crab_render_rich.screen import PipedScreen, Screen, TerminalScreen, terminal_console


def is_terminal(target: RenderTarget) -> bool:
    """A terminal that can draw (``TERM=dumb`` cannot move the cursor: it gets plain text)."""
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(target.out, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def build_renderer(target: RenderTarget) -> RichRenderer:
    screen: Screen
    if is_terminal(target):
        screen = TerminalScreen(terminal_console(target.out))
    else:
        screen = PipedScreen(target.out, target.err)
    return RichRenderer(target, screen)
