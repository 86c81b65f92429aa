"""The model's Markdown as Telegram messages: split under the length limit on paragraph and
code-block boundaries, each piece converted to Telegram's HTML parse mode with everything else
escaped. The plain piece is kept beside it for the fallback when Telegram cannot parse it.

Telegram counts a message's length after its entities are parsed, in UTF-16 code units; pieces
are measured as the HTML they become (never shorter), so every piece fits.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass

LIMIT = 4096
"""Telegram's limit for one message's text."""

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE = re.compile(
    r"(?P<code>`[^`\n]+`)"
    r"|(?P<bold>\*\*(?=\S)[^\n]+?(?<=\S)\*\*|__(?=\S)[^\n]+?(?<=\S)__)"
    r"|(?P<strike>~~(?=\S)[^\n]+?(?<=\S)~~)"
    r"|(?P<italic>(?<![\w*])\*(?=[^\s*])[^\n*]+?(?<=[^\s*])\*(?![\w*])|(?<![\w_])_(?=[^\s_])[^\n_]+?(?<=[^\s_])_(?![\w_]))"
    r"|(?P<link>\[(?P<label>[^\]\n]+)\]\((?P<url>https?://[^\s)]+)\))"
)
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")


@dataclass(frozen=True, slots=True)
class Piece:
    """One message: ``html`` for parse mode HTML, ``plain`` for the fallback."""

    html: str
    plain: str


def units(text: str) -> int:
    """Length in UTF-16 code units, as Telegram counts it."""
    return len(text.encode("utf-16-le")) // 2


def inline_html(text: str) -> str:
    """One line of Markdown as Telegram HTML: code, bold, italic, strike, links; the rest escaped."""
    out: list[str] = []
    pos = 0
    for match in _INLINE.finditer(text):
        out.append(html.escape(text[pos : match.start()], quote=False))
        token = match.group(0)
        if match.group("code"):
            out.append(f"<code>{html.escape(token[1:-1], quote=False)}</code>")
        elif match.group("bold"):
            out.append(f"<b>{inline_html(token[2:-2])}</b>")
        elif match.group("strike"):
            out.append(f"<s>{inline_html(token[2:-2])}</s>")
        elif match.group("italic"):
            out.append(f"<i>{inline_html(token[1:-1])}</i>")
        else:
            label, url = match.group("label"), match.group("url")
            out.append(f'<a href="{html.escape(url, quote=True)}">{html.escape(label, quote=False)}</a>')
        pos = match.end()
    out.append(html.escape(text[pos:], quote=False))
    return "".join(out)


def block_html(block: str) -> str:
    """A paragraph or a fenced code block as Telegram HTML."""
    lines = block.split("\n")
    if lines and _FENCE.match(lines[0]):
        language = lines[0].strip()[3:].strip()
        body = lines[1:-1] if len(lines) > 1 and _FENCE.match(lines[-1]) else lines[1:]
        code = html.escape("\n".join(body), quote=False)
        if language and re.fullmatch(r"[\w+#.-]{1,30}", language):
            return f'<pre><code class="language-{language}">{code}</code></pre>'
        return f"<pre>{code}</pre>"
    shown = []
    for line in lines:
        heading = _HEADING.match(line)
        shown.append(f"<b>{inline_html(heading.group(2))}</b>" if heading else inline_html(line))
    return "\n".join(shown)


def blocks(markdown: str) -> list[str]:
    """Paragraphs (split at blank lines) and fenced code blocks (kept whole, blank lines and all)."""
    found: list[str] = []
    current: list[str] = []
    fence: str | None = None
    for line in markdown.replace("\r\n", "\n").split("\n"):
        opening = _FENCE.match(line)
        if fence is not None:
            current.append(line)
            if opening and opening.group(1) == fence:
                found.append("\n".join(current))
                current, fence = [], None
            continue
        if opening:
            if current:
                found.append("\n".join(current))
            current, fence = [line], opening.group(1)
        elif line.strip():
            current.append(line)
        elif current:
            found.append("\n".join(current))
            current = []
    if current:
        found.append("\n".join(current))
    return found


def _cut_block(block: str, limit: int) -> list[str]:
    """A block too long for one message, cut on line (then word) boundaries; a line with no room
    to break is cut only where a message ends (no newline is ever put inside a line: URLs and
    base64 survive). A code block's parts each stay a fenced block."""
    lines = block.split("\n")
    if _FENCE.match(lines[0]):
        head = lines[0]
        tail = lines[-1] if len(lines) > 1 and _FENCE.match(lines[-1]) else head.strip()[:3]
        body = lines[1:-1] if len(lines) > 1 and _FENCE.match(lines[-1]) else lines[1:]
        room = limit - units(block_html(f"{head}\n\n{tail}")) - 1
        parts: list[str] = []
        chunk: list[str] = []
        for line in body:
            for piece in _hard_cut(line, room, _escaped_units):
                candidate = "\n".join([*chunk, piece])
                if chunk and _escaped_units(candidate) > room:
                    parts.append("\n".join([head, *chunk, tail]))
                    chunk = []
                chunk.append(piece)
        parts.append("\n".join([head, *chunk, tail]))
        return parts
    parts = []
    chunk = []
    for line in lines:
        for piece in _split_words(line, limit):
            candidate = "\n".join([*chunk, piece])
            if chunk and units(block_html(candidate)) > limit:
                parts.append("\n".join(chunk))
                chunk = []
            chunk.append(piece)
    if chunk:
        parts.append("\n".join(chunk))
    return parts


def _escaped_units(text: str) -> int:
    return units(html.escape(text, quote=False))


def _html_units(text: str) -> int:
    return units(block_html(text))


def _split_words(line: str, limit: int) -> list[str]:
    """A line too long for one message, cut at spaces (each cut is where a message ends), a word
    longer than a message cut where it must be."""
    if units(block_html(line)) <= limit:
        return [line]
    parts: list[str] = []
    current = ""
    for word in line.split(" "):
        candidate = f"{current} {word}" if current else word
        if current and units(block_html(candidate)) > limit:
            parts.append(current)
            current = word
        else:
            current = candidate
    if current:
        parts.append(current)
    out: list[str] = []
    for part in parts:
        out.extend([part] if units(block_html(part)) <= limit else _hard_cut(part, limit, _html_units))
    return out


def _hard_cut(text: str, limit: int, measure: Callable[[str], int]) -> list[str]:
    """``text`` in as few slices as fit ``limit`` by ``measure``: each slice but the last as long
    as fits, so every cut falls where one message has to end anyway."""
    limit = max(limit, 8)
    slices: list[str] = []
    rest = text
    while measure(rest) > limit:
        low, high = 1, len(rest)  # the longest prefix that fits: measure grows with length
        while low < high:
            middle = (low + high + 1) // 2
            if measure(rest[:middle]) <= limit:
                low = middle
            else:
                high = middle - 1
        slices.append(rest[:low])
        rest = rest[low:]
    slices.append(rest)
    return slices


def split_message(markdown: str, limit: int = LIMIT) -> list[Piece]:
    """``markdown`` as messages, each under ``limit`` as HTML, cut between paragraphs and code
    blocks where possible; an empty text gives no messages."""
    pieces: list[Piece] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            pieces.append(Piece("\n\n".join(block_html(b) for b in current), "\n\n".join(current)))
            current.clear()

    for block in blocks(markdown):
        parts = [block] if units(block_html(block)) <= limit else _cut_block(block, limit)
        for part in parts:
            candidate = "\n\n".join(block_html(b) for b in [*current, part])
            if current and units(candidate) > limit:
                flush()
            current.append(part)
    flush()
    return pieces


def plain_pieces(text: str, limit: int = LIMIT) -> list[str]:
    """Plain text (a command's output) cut under ``limit`` on line boundaries; a line longer than
    a message is cut only where a message ends."""
    out: list[str] = []
    current = ""
    for line in text.split("\n"):
        for piece in _hard_cut(line, limit, units):
            candidate = f"{current}\n{piece}" if current else piece
            if current and units(candidate) > limit:
                out.append(current)
                current = piece
            else:
                current = candidate
    if current.strip():
        out.append(current)
    return out
