"""The plain text renderer: the answer streams to stdout (so ``> answer.txt`` and ``| tee`` work),
progress goes to stderr, terminal escapes from outside shown as visible text (docs/security.md)."""

from __future__ import annotations

from crab._contracts.events import (
    ChildEvent,
    CommandOutput,
    CompactionEvent,
    ErrorEvent,
    Event,
    FileDiff,
    NoticeEvent,
    PlanEvent,
    PlanItem,
    RetryEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResultEvent,
    TurnEnded,
    TurnStarted,
)
from crab._contracts.renderers import RenderTarget

DIM, RED, GREEN, CYAN, YELLOW, RESET = "\033[2m", "\033[31m", "\033[32m", "\033[36m", "\033[33m", "\033[0m"
PREVIEW_LINES = 3
DIFF_LINES = 400
"""Lines of a result's diffs shown; the rest is folded into one "… N more lines"."""

_VISIBLE = {c: f"^{chr(c ^ 0x40)}" for c in (*range(0x20), 0x7F) if chr(c) not in "\n\t"}
_VISIBLE.update({c: f"\\x{c:02x}" for c in range(0x80, 0xA0)})
# Bidirectional overrides and isolates reorder what follows them on screen ("Trojan Source"):
# a command or diff line could read as something other than what runs or is written.
_VISIBLE.update({c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))})


def visible(text: str) -> str:
    """``text`` with control characters other than newline and tab shown as ``^[`` or ``\\x9b``,
    and bidirectional overrides and isolates as ``\\u202e``."""
    return text.translate(_VISIBLE)


def _args_preview(event: ToolCallEvent, limit: int = 100) -> str:
    parts = []
    for key, value in event.call.arguments.items():
        text = value if isinstance(value, str) else repr(value)
        parts.append(f"{key}={text!r}" if isinstance(value, str) else f"{key}={text}")
    preview = ", ".join(parts)
    return preview if len(preview) <= limit else preview[: limit - 1] + "…"


PLAN_MARKS = {"done": "[x]", "in_progress": "[>]", "pending": "[ ]"}


def plan_lines(items: tuple[PlanItem, ...]) -> list[str]:
    """A plan as the plain renderer shows it: a head line, then ``[x]``/``[>]``/``[ ]`` and each step."""
    if not items:
        return ["plan cleared"]
    done = sum(item.status == "done" for item in items)
    steps = [f"  {PLAN_MARKS.get(item.status, '[ ]')} {_first_line(item.text, 200)}" for item in items]
    return [f"plan ({done}/{len(items)} done):", *steps]


def _first_line(text: str, limit: int = 120) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def diff_lines(diffs: tuple[FileDiff, ...], limit: int = DIFF_LINES) -> list[str]:
    """The unified diffs of ``diffs``, one after the other, at most ``limit`` lines (a last line
    says how many more there were); control characters visible, as everything from outside."""
    lines = [visible(line) for diff in diffs for line in diff.unified.splitlines()]
    if len(lines) > limit:
        lines = [*lines[:limit], f"… {len(lines) - limit} more lines"]
    return lines


def diff_summary(diffs: tuple[FileDiff, ...]) -> str:
    """``a.py +3 -1, b.py +10`` — which files changed and how much."""
    parts = []
    for diff in diffs:
        counts = ([f"+{diff.added}"] if diff.added else []) + ([f"-{diff.removed}"] if diff.removed else [])
        parts.append(visible(" ".join([diff.path, *counts])))
    return ", ".join(parts)


def _diff_colour(line: str) -> str:
    if line.startswith(("+++", "---")):
        return DIM
    if line.startswith("+"):
        return GREEN
    if line.startswith("-"):
        return RED
    return CYAN if line.startswith("@@") else DIM


class PlainRenderer:
    """Streams text deltas as they come; one short stderr line per tool call, retry or problem, and
    the whole checklist each time a plan changes (``PlanEvent``); a child session's start, tool
    calls and end as lines too (``ChildEvent``); a result that changed files shows their diffs.
    ANSI styling only when the target says color. Text from outside (file contents, a model's
    reply) may hold escapes that retitle, clear or rewrite a terminal: progress lines always, and
    the answer on a terminal, show control characters as text (``^[``, ``\x9b``; ``visible``)."""

    def __init__(self, target: RenderTarget) -> None:
        self.target = target
        self._mid_line = False
        self._thinking = False

    def _style(self, text: str, code: str) -> str:
        return f"{code}{text}{RESET}" if self.target.color else text

    def _out(self, text: str) -> None:
        if not text:
            return
        self.target.out.write(text)
        self.target.out.flush()
        self._mid_line = not text.endswith("\n")

    def _err(self, text: str, code: str = DIM) -> None:
        if self._mid_line:
            self._out("\n")
        self.target.err.write(self._style(visible(text), code) + "\n")
        self.target.err.flush()

    def _child(self, event: ChildEvent) -> None:
        """A child session (a subagent) in one dim line per start, tool call and end; its text is
        never printed as the answer."""
        labels = [event.label]
        while isinstance(event.event, ChildEvent):
            event = event.event
            labels.append(event.label)
        who, inner = " › ".join(labels), event.event
        if isinstance(inner, TurnStarted):
            self._err(f"  ↳ {who} started (session {event.session_id})")
        elif isinstance(inner, ToolCallEvent):
            self._err(f"  ↳ {who} → {inner.call.name}({_args_preview(inner, 80)})")
        elif isinstance(inner, TurnEnded):
            self._err(f"  ↳ {who} {'done' if inner.stop == 'end' else inner.stop}", RED if inner.error else DIM)

    def handle(self, event: Event) -> None:
        if isinstance(event, ChildEvent):
            self._child(event)
        elif isinstance(event, TextDelta):
            self._thinking = False
            self._out(visible(event.text) if self.target.color else event.text)
        elif isinstance(event, ThinkingDelta):
            if self.target.verbose:
                if not self._thinking:
                    self._err("thinking…")
                    self._thinking = True
                self.target.err.write(self._style(visible(event.text), DIM))
        elif isinstance(event, ToolCallEvent):
            self._err(f"→ {event.call.name}({_args_preview(event)})")
        elif isinstance(event, ToolResultEvent) and event.diffs and not event.is_error:
            self._err(f"  ✓ {event.name}: {diff_summary(event.diffs)}")
            for line in diff_lines(event.diffs):
                self._err(f"    {line}", _diff_colour(line))
        elif isinstance(event, ToolResultEvent):
            mark = "✗" if event.is_error else "✓"
            lines = event.content.splitlines()
            summary = _first_line(event.content) if event.is_error else f"{len(lines)} lines"
            self._err(f"  {mark} {event.name}: {summary}", RED if event.is_error else DIM)
            if not event.is_error:
                for line in lines[:PREVIEW_LINES]:
                    self._err(f"    {_first_line(line, 100)}")
                if len(lines) > PREVIEW_LINES:
                    self._err(f"    … {len(lines) - PREVIEW_LINES} more")
        elif isinstance(event, RetryEvent):
            self._err(
                f"retrying in {event.delay:.1f} s (attempt {event.attempt}/{event.max_attempts}): {event.reason}",
                YELLOW,
            )
        elif isinstance(event, ErrorEvent):
            self._err(f"error: {event.message}", RED)
        elif isinstance(event, NoticeEvent):
            self._err(f"{event.level}: {event.message}", YELLOW if event.level == "warning" else DIM)
        elif isinstance(event, PlanEvent):
            for line in plan_lines(event.items):
                self._err(line)
        elif isinstance(event, CompactionEvent):
            self._err(event.line(), YELLOW if event.phase == "failed" else DIM)
        elif isinstance(event, CommandOutput):
            if event.is_error:
                self._err(event.text, RED)
            elif event.text:
                # A command's output carries what the model wrote (/todo's plan, a resume's recap):
                # on a terminal its control characters are shown, as the answer's are.
                text = visible(event.text) if self.target.color else event.text
                self._out(text if text.endswith("\n") else text + "\n")
        elif isinstance(event, TurnEnded) and self._mid_line:
            self._out("\n")

    def close(self) -> None:
        if self._mid_line:
            self._out("\n")
