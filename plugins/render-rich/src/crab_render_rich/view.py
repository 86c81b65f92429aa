"""What each piece of a turn looks like: tool lines, notices, the status line (rich renderables).

Pure functions of event data; text from outside (model output, tool results, arguments) has its
control characters made visible first, so nothing a model or a file says can drive the terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crab.messages import ToolCall, Usage
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.segment import Segment
    from rich.text import Text

RESULT_LINES = 3
ARGS_LIMIT = 80
LINE_LIMIT = 160
KEY_ARGS = ("command", "cmd", "path", "file", "pattern", "query", "url", "name")
"""Arguments that say most about a call; shown first."""

_VISIBLE = {c: f"^{chr(c ^ 0x40)}" for c in (*range(0x20), 0x7F) if chr(c) not in "\n\t"}
_VISIBLE.update({c: f"\\x{c:02x}" for c in range(0x80, 0xA0)})
# Bidirectional overrides and isolates reorder what follows them on screen ("Trojan Source"):
# a command or diff line could read as something other than what runs or is written.
_VISIBLE.update({c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))})


def visible(text: str) -> str:
    """``text`` with control characters other than newline and tab shown as ``^[`` or ``\\x9b``,
    and bidirectional overrides and isolates as ``\\u202e``."""
    return text.translate(_VISIBLE)


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: str, limit: int = 100) -> str:
    """``text`` on one line (whitespace runs as one space, control characters visible), cut."""
    return shorten(" ".join(visible(text).split()), limit)


def fit(parts: Sequence[str], width: int, sep: str = " · ") -> str:
    """As many whole ``parts`` as fit in ``width`` columns, joined by ``sep`` (one line); a first part
    wider than that alone is cut after a word, so nothing ends mid-word."""
    line = ""
    for part in parts:
        joined = f"{line}{sep}{part}" if line else part
        if cell_len(joined) > width:
            break
        line = joined
    if not line and parts:
        words = wrap(parts[0], max(1, width - 1))
        line = words[0] + "…" if len(words) > 1 else words[0] if words else ""
    return line


def pack(parts: Sequence[str], width: int, indent: str = "  ", sep: str = " · ") -> list[str]:
    """``parts`` packed into lines of ``width`` columns, each line starting with ``indent``; a line
    breaks between parts, or between words of a part too wide for one line, never inside a word."""
    lines: list[str] = []
    line = ""
    for part in parts:
        joined = f"{line}{sep}{part}" if line else f"{indent}{part}"
        if cell_len(joined) <= width:
            line = joined
            continue
        if line:
            lines.append(line)
        line = f"{indent}{part}"
        if cell_len(line) > width:
            *full, line = wrap(part, width, indent)
            lines.extend(full)
    if line:
        lines.append(line)
    return lines


def wrap(text: str, width: int, indent: str = "", subsequent: str | None = None) -> list[str]:
    """``text`` wrapped at word boundaries to ``width`` columns (a word longer than a line is cut)."""
    import textwrap

    return textwrap.wrap(
        text,
        max(width, len(indent) + 1),
        initial_indent=indent,
        subsequent_indent=indent if subsequent is None else subsequent,
        break_on_hyphens=False,
    ) or [indent]


def cell_len(text: str) -> int:
    """Terminal columns ``text`` takes (wide characters count two)."""
    from rich.cells import cell_len as columns

    return columns(text)


def key_args(arguments: dict[str, Any], limit: int = ARGS_LIMIT) -> str:
    """The arguments that say most about a call, one line: key ones first, long values cut."""
    keys = sorted(arguments, key=lambda k: (k not in KEY_ARGS, KEY_ARGS.index(k) if k in KEY_ARGS else 0))
    parts = []
    for key in keys:
        value = arguments[key]
        text = value if isinstance(value, str) else repr(value)
        text = " ".join(visible(text).split())
        parts.append(f"{key}={shorten(text, 48)}")
    return shorten(" ".join(parts), limit)


def count_of(count: int, noun: str) -> str:
    """``1 line``, ``2 lines``: the noun agrees with the count."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


def seconds(value: float) -> str:
    if value < 10:
        return f"{value:.1f}s"
    if value < 120:
        return f"{value:.0f}s"
    return f"{int(value // 60)}m{int(value % 60):02d}s"


def tokens(count: int) -> str:
    if count < 1000:
        return str(count)
    if count < 100_000:
        return f"{count / 1000:.1f}k"
    return f"{count // 1000}k"


def tool_running(call: ToolCall, elapsed: float, spinner: str) -> Text:
    from rich.text import Text

    line = Text(f"{spinner} ", style="cyan")
    line.append(visible(call.name), style="bold")
    args = key_args(call.arguments)
    if args:
        line.append(f" {args}", style="dim")
    line.append(f"  {seconds(elapsed)}", style="dim")
    return line


def tool_done(call: ToolCall | None, name: str, content: str, is_error: bool, duration: float) -> Text:
    """``✓ name key=args · 0.3s · 12 lines`` and the head of the result (errors in red)."""
    from rich.text import Text

    line = Text("✗ " if is_error else "✓ ", style="bold red" if is_error else "green")
    line.append(visible(name), style="bold red" if is_error else "bold")
    if call is not None:
        args = key_args(call.arguments)
        if args:
            line.append(f" {args}", style="dim")
    lines = content.strip("\n").splitlines()
    line.append(f" · {seconds(duration)}", style="dim")
    if not is_error:
        line.append(f" · {count_of(len(lines), 'line')}", style="dim")
    head = lines[:RESULT_LINES]
    for text in head:
        line.append("\n  ")
        line.append(shorten(visible(text.rstrip()), LINE_LIMIT), style="red" if is_error else "dim")
    if len(lines) > RESULT_LINES:
        line.append(f"\n  … {count_of(len(lines) - RESULT_LINES, 'more line')}", style="dim italic")
    return line


def notice(text: str, style: str, prefix: str = "") -> Text:
    from rich.text import Text

    return Text(prefix + visible(text), style=style)


def retry(attempt: int, max_attempts: int, delay: float, reason: str) -> Text:
    return notice(f"retrying in {delay:.1f}s (attempt {attempt}/{max_attempts}): {reason}", "yellow", "↻ ")


def thinking_collapsed(text: str) -> Text:
    from rich.text import Text

    words = len(text.split())
    return Text(f"▸ thought ({words} words) · /thinking shows it", style="dim italic")


def thinking_shown(text: str) -> Text:
    from rich.text import Text

    return Text(visible(text.strip()), style="dim italic")


def status_line(
    model: str, usage: Usage | None, context_tokens: int, context_window: int | None, elapsed: float
) -> Text:
    """``model · 1.2k in · 340 out · $0.0012 · context 3% of 128k · 4.2s``."""
    from rich.text import Text

    parts = [model] if model else []
    if usage is not None:
        parts.append(f"{tokens(usage.input_tokens + usage.cache_read_tokens)} in")
        parts.append(f"{tokens(usage.output_tokens)} out")
        if usage.cost is not None:
            parts.append(f"${usage.cost:.4f}")
    if context_tokens:
        if context_window:
            parts.append(f"context {100 * context_tokens / context_window:.0f}% of {tokens(context_window)}")
        else:
            parts.append(f"context {tokens(context_tokens)}")
    parts.append(seconds(elapsed))
    return Text(visible(" · ".join(parts)), style="dim")


def markdown(text: str) -> RenderableType:
    """One Markdown block, without the blank lines rich puts around lists, quotes, tables and code
    (their padding): the renderer separates blocks with exactly one blank line itself."""
    from rich.markdown import Markdown

    return Trimmed(Markdown(visible(text), code_theme="monokai"))


class Trimmed:
    """``renderable`` as rendered at the console's width, without blank lines at its ends and
    without the spaces rich pads each line with to the full width: a terminal that narrows rewraps
    a padded line into the line and a blank one (tmux, most terminals since), so every gap grew."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        lines = [
            _rstrip(line) for line in console.render_lines(self.renderable, options.update(height=None), pad=False)
        ]
        filled = [i for i, line in enumerate(lines) if any(segment.text.strip() for segment in line)]
        if not filled:
            return
        for line in lines[filled[0] : filled[-1] + 1]:
            yield from line
            yield Segment.line()


def _rstrip(line: list[Segment]) -> list[Segment]:
    from rich.segment import Segment

    line = list(line)
    while line and not line[-1].control and not line[-1].text.rstrip():
        line.pop()
    if line and not line[-1].control:
        last = line[-1]
        line[-1] = Segment(last.text.rstrip(), last.style)
    return line
