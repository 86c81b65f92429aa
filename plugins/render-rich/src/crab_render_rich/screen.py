"""Where the rich renderer draws: scrollback (printed once) and a live area (redrawn in place).

``Screen`` is what the renderer needs; ``TerminalScreen`` is a rich ``Live`` on a terminal,
``PipedScreen`` writes plain text with no ANSI at all (a file, a pipe, a dumb terminal), and the
chat input offers its own screen (``chat_input.PromptScreen``), so the live area sits above the
line being typed.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Protocol, TextIO

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

REFRESH_PER_SECOND = 12


class Screen(Protocol):
    tty: bool
    """True when the answer is drawn as rich Markdown; False when it is written as it comes."""

    def print(self, renderable: RenderableType) -> None:
        """Show ``renderable`` once, in the scrollback (above the live area)."""
        ...

    def answer(self, text: str) -> None:
        """Raw answer text (used only when ``tty`` is False)."""
        ...

    def live(self, area: RenderableType | None) -> None:
        """What the live area shows (rendered when redrawn, not now); None hides it."""
        ...

    def refresh(self) -> None:
        """The live area's content changed."""
        ...

    def close(self) -> None: ...


def no_color() -> bool:
    """https://no-color.org: any non-empty ``NO_COLOR`` turns colour off (bold and dim stay)."""
    return bool(os.environ.get("NO_COLOR"))


def terminal_console(file: TextIO, **options: Any) -> Console:
    """A rich console drawing on a terminal: width follows the terminal (resizes included)."""
    from rich.console import Console

    options.setdefault("no_color", no_color() or None)
    return Console(
        file=file, force_terminal=True, highlight=False, soft_wrap=False, markup=False, emoji=False, **options
    )


def _stderr_is_terminal() -> bool:
    import sys

    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class TerminalScreen:
    """A rich ``Live`` area at the bottom of a terminal; printed things scroll above it.

    The live area is drawn only while it has something to show and is removed again (transient),
    so the scrollback holds each block once. ``live_area=False`` never draws it (snapshots).
    """

    tty = True

    def __init__(self, console: Console, *, live_area: bool = True) -> None:
        self.console = console
        self.live_area = live_area
        self._live: Any = None
        self._area: RenderableType | None = None

    def print(self, renderable: RenderableType) -> None:
        self.console.print(renderable)

    def answer(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, end="")

    def live(self, area: RenderableType | None) -> None:
        self._area = area
        if not self.live_area:
            return
        if area is None:
            self._stop()
            return
        if self._live is None:
            from rich.live import Live

            self._live = Live(
                area,
                console=self.console,
                auto_refresh=True,
                refresh_per_second=REFRESH_PER_SECOND,
                transient=True,
                redirect_stdout=False,
                # What crab itself writes to a terminal's stderr meanwhile (the permission gate's
                # question in `crab run`, a warning) is printed above the live area, not under it.
                redirect_stderr=_stderr_is_terminal(),
                vertical_overflow="crop",
            )
            self._live.start()
        else:
            self._live.update(area, refresh=False)

    def refresh(self) -> None:
        return None  # the Live thread redraws REFRESH_PER_SECOND times a second, not per token

    def _stop(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()

    def close(self) -> None:
        self._stop()


class PipedScreen:
    """No terminal: the answer is written as it streams to ``out``; progress lines go to ``err``
    as plain text (no ANSI, whatever ``TERM`` says), so ``> file`` and ``| less`` stay readable."""

    tty = False

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self.mid_line = False
        self._console: Console | None = None

    def _err_console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(
                file=self.err, force_terminal=False, color_system=None, no_color=True, width=10_000, highlight=False
            )
        return self._console

    def print(self, renderable: RenderableType) -> None:
        if self.mid_line:
            self.answer("\n")
        from rich.text import Text

        if isinstance(renderable, Text):
            self.err.write(renderable.plain.rstrip("\n") + "\n")
            self.err.flush()
        else:
            self._err_console().print(renderable)

    def answer(self, text: str) -> None:
        if not text:
            return
        self.out.write(text)
        self.out.flush()
        self.mid_line = not text.endswith("\n")

    def live(self, area: RenderableType | None) -> None:
        return None

    def refresh(self) -> None:
        return None

    def close(self) -> None:
        if self.mid_line:
            self.answer("\n")
