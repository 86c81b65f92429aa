"""``RichRenderer``: loop events shown on a ``Screen`` — Markdown that streams, tools that spin.

Events arrive only through the renderer protocol (``handle``/``close``). Completed Markdown
blocks are printed once into the scrollback; only the block being written, the thinking
indicator and the running tools live in the redrawn area, which renders lazily (when the screen
redraws, a dozen times a second), so a token costs a few string operations however long the
message is. Without a terminal (``PipedScreen``) the answer is written as it comes, no ANSI.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crab.events import (
    ChildEvent,
    CommandOutput,
    CompactionEvent,
    ErrorEvent,
    Event,
    NoticeEvent,
    PlanEvent,
    RetryEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResultEvent,
    TurnEnded,
    TurnStarted,
    UsageEvent,
)
from crab.messages import ToolCall
from crab.rendering import RenderTarget

from crab_render_rich import view
from crab_render_rich.blocks import BlockSplitter
from crab_render_rich.checklist import Checklist
from crab_render_rich.children import ChildLines

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

    from crab_render_rich.screen import Screen

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TAIL_MARGIN = 6
"""Lines of the terminal kept free below a long live block (tools, the prompt)."""


@dataclass
class Preferences:
    """Display choices shared by the renderers of this process (``/thinking`` toggles one)."""

    show_thinking: bool = False


PREFERENCES = Preferences()


def spinner_frame(now: float | None = None) -> str:
    return SPINNER[int((time.monotonic() if now is None else now) * 10) % len(SPINNER)]


@dataclass
class Running:
    call: ToolCall
    started: float = field(default_factory=time.monotonic)


class LiveArea:
    """The redrawn part: the block being written, thinking, running tools. Rendered lazily."""

    def __init__(self, renderer: RichRenderer) -> None:
        self.renderer = renderer

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        r = self.renderer
        frame = spinner_frame()
        if r.checklist.items:
            yield r.checklist.text(options.max_width)
        if r.thinking_text and not r.blocks.tail:
            if r.prefs.show_thinking:
                yield from _last_lines(console, options, view.thinking_shown(r.thinking_text), 8)
            yield Text(f"{frame} thinking…", style="dim italic")
        tail = r.blocks.tail
        if tail.strip():
            budget = max(3, options.size.height - TAIL_MARGIN - len(r.running))
            yield from _last_lines(console, options, view.markdown(tail), budget)
        now = time.monotonic()
        for running in r.running.values():
            yield view.tool_running(running.call, now - running.started, frame)
        yield from r.children.lines(now, frame)
        if r.waiting and not tail and not r.running and not r.thinking_text:
            yield Text(f"{frame} working…", style="dim")


def _last_lines(console: Console, options: ConsoleOptions, renderable: Any, count: int) -> RenderResult:
    """The last ``count`` lines of ``renderable`` as rendered at this width (a long block scrolls)."""
    from rich.segment import Segment

    lines = console.render_lines(renderable, options.update(height=None), pad=False)
    for line in lines[-count:]:
        yield from line
        yield Segment.line()


class RichRenderer:
    """Shows a chat or a run on a ``Screen``; see the module docstring."""

    def __init__(
        self,
        target: RenderTarget,
        screen: Screen,
        prefs: Preferences = PREFERENCES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.target = target
        self.screen = screen
        self.prefs = prefs
        self.blocks = BlockSplitter()
        self.area = LiveArea(self)
        self.thinking_text = ""
        self.running: dict[str, Running] = {}
        self.calls: dict[str, ToolCall] = {}
        self.waiting = False
        self.wrote_block = False
        self.turn_started: float | None = None
        self.context_tokens = 0
        self.answering = False
        """The model's reply is being written: a command's output now would land inside it."""
        self.held: list[CommandOutput] = []
        self.checklist = Checklist()
        self.children = ChildLines(clock)
        """Running child sessions (subagents), one live line each: their text never joins the answer."""
        self._live_shown = False

    # --- the live area -------------------------------------------------------------------------

    def _live(self) -> None:
        wanted = bool(self.blocks.tail.strip() or self.running or self.thinking_text or self.waiting or self.children)
        if wanted != self._live_shown:
            self._live_shown = wanted
            self.screen.live(self.area if wanted else None)
        elif wanted:
            self.screen.refresh()

    def use_screen(self, screen: Screen) -> None:
        """Draw on ``screen`` from now on (the chat input brings one that shares the terminal)."""
        self.screen.close()
        self.screen = screen
        self._live_shown = False
        self._live()

    # --- text ----------------------------------------------------------------------------------

    def _block(self, text: str) -> None:
        if self.wrote_block:
            self.screen.print("")
        self.screen.print(view.markdown(text.rstrip("\n")))
        self.wrote_block = True

    def _text(self, text: str) -> None:
        self._end_thinking()
        if not self.screen.tty:
            self.screen.answer(text)
            return
        for block in self.blocks.feed(text):
            self._block(block)
        self._live()

    def _flush_text(self) -> None:
        rest = self.blocks.finish()
        if rest and self.screen.tty:
            self._block(rest)
        self.wrote_block = False

    def _end_thinking(self) -> None:
        if not self.thinking_text:
            return
        text, self.thinking_text = self.thinking_text, ""
        if self.screen.tty:
            shown = view.thinking_shown(text) if self.prefs.show_thinking else view.thinking_collapsed(text)
            self.screen.print(shown)
        elif self.target.verbose:
            self.screen.print(view.thinking_shown(text))

    def _line(self, renderable: Any) -> None:
        """A progress line: first the text so far, so the order on screen is the order of events."""
        self._end_thinking()
        self._flush_text()
        self.screen.print(renderable)

    # --- the protocol --------------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        if isinstance(event, ChildEvent):
            self.children.handle(event)
            self._live()
            return
        if isinstance(event, TextDelta):
            self.waiting = False
            self.answering = True
            self._text(event.text)
            return
        if isinstance(event, ThinkingDelta):
            self.waiting = False
            self.answering = True
            self.thinking_text += event.text
            self._live()
            return
        if isinstance(event, TurnStarted):
            self.turn_started = self.clock()
            self.context_tokens = 0
            self.waiting = True
        elif isinstance(event, ToolCallEvent):
            self._line_break()
            self._release()
            self.calls[event.call.id] = event.call
            self.running[event.call.id] = Running(event.call)
        elif isinstance(event, ToolResultEvent):
            self.running.pop(event.call_id, None)
            call = self.calls.pop(event.call_id, None)
            if event.diffs and not event.is_error:
                from crab_render_rich.diff_view import tool_changed

                self._line(tool_changed(call, event.name, event.diffs, event.duration_ms / 1000))
            else:
                self._line(view.tool_done(call, event.name, event.content, event.is_error, event.duration_ms / 1000))
            self.waiting = not self.running
        elif isinstance(event, UsageEvent):  # a model call ended: its reply is written
            self.context_tokens = event.usage.input_tokens + event.usage.cache_read_tokens + event.usage.output_tokens
            self._line_break()
            self._release()
        elif isinstance(event, RetryEvent):
            self._line(view.retry(event.attempt, event.max_attempts, event.delay, event.reason))
        elif isinstance(event, ErrorEvent):
            self._line(view.notice(event.message, "bold red", "✗ error: "))
        elif isinstance(event, NoticeEvent):
            style = "yellow" if event.level == "warning" else "dim"
            self._line(view.notice(event.message, style, "! " if event.level == "warning" else "· "))
        elif isinstance(event, PlanEvent):
            self.checklist.update(event.items)
            if not self.screen.tty or self.turn_started is None:
                self._plan_printed()  # no live area (a pipe), or a plan outside a turn: print it
        elif isinstance(event, CompactionEvent):
            failed = event.phase == "failed"
            self._line(view.notice(event.line(), "yellow" if failed else "dim", "! " if failed else "· "))
        elif isinstance(event, CommandOutput):
            # A /command typed while the answer streams is shown once that reply is written, not
            # inside it (commands answer at once, even during a turn).
            if self.answering:
                self.held.append(event)
            else:
                self._command(event)
        elif isinstance(event, TurnEnded):
            self._turn_ended(event)
        self._live()

    def _line_break(self) -> None:
        self._end_thinking()
        self._flush_text()

    def _command(self, event: CommandOutput) -> None:
        if event.is_error:
            self._line(view.notice(event.text.rstrip("\n"), "red"))
        elif event.text:
            text = event.text.rstrip("\n")
            self._line_break()
            if not self.screen.tty:
                self.screen.answer(text + "\n")
            elif event.command == "recap":  # crab chat -c/-r, /resume: the exchanges it repeats
                self._recap(text)
            else:
                self.screen.print(view.notice(text, ""))

    def _recap(self, text: str) -> None:
        """The exchanges a continued chat starts with: inputs as typed, answers as Markdown."""
        from crab_render_rich.recap import recap_parts

        for part in recap_parts(text):
            if part.kind == "answer":
                for block in self.blocks.feed(part.text + "\n"):
                    self._block(block)
                self._flush_text()
            else:
                self.screen.print(
                    view.notice(
                        part.text, "dim" if part.kind == "header" else "bold", "❯ " if part.kind == "said" else ""
                    )
                )

    def _plan_printed(self) -> None:
        """The checklist as it stands, once, into the scrollback (the live area shows it only during a turn)."""
        self._line_break()
        self.screen.print(self.checklist.text())
        self.checklist.printed()

    def _release(self) -> None:
        """The reply being written ended: show the command output held meanwhile."""
        self.answering = False
        held, self.held = self.held, []
        for event in held:
            self._command(event)

    def _turn_ended(self, event: TurnEnded) -> None:
        self._line_break()
        self.answering = False
        self.running.clear()
        self.calls.clear()
        self.children.clear()
        self.waiting = False
        if self.checklist.changed:
            self._plan_printed()
        if event.stop == "aborted":
            self.screen.print(view.notice("turn stopped", "yellow", "■ "))
        elapsed = self.clock() - self.turn_started if self.turn_started is not None else 0.0
        self.turn_started = None
        if event.stop != "command":
            # The turn says what it talked to: /model may have switched it since the run started.
            model = event.model or self.target.model
            window = event.context_window if event.model else self.target.context_window
            self.screen.print(view.status_line(model, event.usage, self.context_tokens, window, elapsed))
        self._release()

    def close(self) -> None:
        self._line_break()
        self._release()
        self.running.clear()
        self.waiting = False
        self._live_shown = False
        self.screen.live(None)
        self.screen.close()
