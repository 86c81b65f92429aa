"""``PromptScreen``: the rich renderer's screen while prompt_toolkit owns the terminal.

Printed things are rendered by rich to ANSI at the terminal's current width and written above
the prompt (``run_in_terminal``, batched once per event-loop turn); the live area is rendered
only when prompt_toolkit redraws the prompt (``ansi``), so it sits above the line being typed
and follows resizes.
"""

from __future__ import annotations

import asyncio
import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console, RenderableType


def terminal_size() -> tuple[int, int]:
    """(columns, rows) of the terminal prompt_toolkit draws on."""
    try:
        from prompt_toolkit.application.current import get_app_session

        size = get_app_session().output.get_size()
        if size.columns > 0:
            return size.columns, size.rows
    except Exception:  # no output yet, or not a terminal: fall back to the environment
        pass
    fallback = shutil.get_terminal_size()
    return fallback.columns, fallback.lines


class PromptScreen:
    tty = True

    def __init__(self) -> None:
        self._pending: list[str] = []
        self._area: RenderableType | None = None
        self._console: Console | None = None
        self._scheduled = False

    def render(self, renderable: RenderableType) -> str:
        """``renderable`` as ANSI text at the terminal's width (height bounds a live block)."""
        from crab_render_rich.screen import terminal_console

        columns, rows = terminal_size()
        if self._console is None:
            import io

            self._console = terminal_console(io.StringIO())
        console = self._console
        console.size = (max(20, columns), max(5, rows))
        with console.capture() as capture:
            console.print(renderable)
        return capture.get()

    def ansi(self) -> str:
        """The live area as ANSI text, rendered now (prompt_toolkit calls this when it redraws)."""
        return self.render(self._area) if self._area is not None else ""

    def print(self, renderable: RenderableType) -> None:
        self._pending.append(self.render(renderable))
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._flush()
            return
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._flush)

    def answer(self, text: str) -> None:
        self._pending.append(text)
        self._flush()

    def _flush(self) -> None:
        self._scheduled = False
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending.clear()
        from prompt_toolkit.application import get_app_or_none, run_in_terminal
        from prompt_toolkit.application.current import get_app_session

        def write() -> None:
            output = get_app_session().output
            output.write_raw(text)
            output.flush()

        app = get_app_or_none()
        if app is not None and app.is_running:
            run_in_terminal(write, in_executor=False)
        else:
            write()

    def live(self, area: RenderableType | None) -> None:
        self._area = area
        self.refresh()

    def refresh(self) -> None:
        from prompt_toolkit.application import get_app_or_none

        app = get_app_or_none()
        if app is not None and app.is_running:
            app.invalidate()

    def close(self) -> None:
        self._flush()
