"""Cutting long text to a line and byte budget, on line and UTF-8 boundaries, with a note saying so."""

from __future__ import annotations

from typing import Literal

from crab._contracts.truncate import Keep, OutputLimit, Truncation


def _cut_utf8(data: bytes, size: int, keep: Keep) -> bytes:
    """At most ``size`` bytes from the head or tail of ``data`` without splitting a character."""
    if keep == "head":
        piece = data[:size]
        start = len(piece)
        while start > 0 and start > len(piece) - 4 and piece[start - 1] & 0xC0 == 0x80:
            start -= 1  # back over continuation bytes to the lead byte of the last character
        if start > 0 and piece[start - 1] >= 0xC0:
            lead = piece[start - 1]
            width = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
            if len(piece) - (start - 1) < width:
                piece = piece[: start - 1]  # the last character is incomplete
        return piece
    piece = data[len(data) - size :] if size else b""
    skip = 0
    while skip < len(piece) and skip < 3 and piece[skip] & 0xC0 == 0x80:
        skip += 1  # continuation bytes of a character cut in front
    return piece[skip:]


def _encode(text: str) -> bytes:
    # surrogatepass: tool output may hold lone surrogates (undecodable file names); count them, never fail
    return text.encode("utf-8", "surrogatepass")


def split_lines(text: str) -> list[str]:
    """Lines ending in ``\n`` (kept), plus a last unterminated one. Unlike ``str.splitlines`` it
    does not break at form feeds or Unicode separators, so counts match what editors and tools show."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _line_count(text: str) -> int:
    """``len(split_lines(text))``, counted in C."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _byte_size(text: str, budget: int) -> int:
    """``len(_encode(text))``, or any number no larger than ``budget`` when it is that small."""
    if len(text) * 4 <= budget:  # no character takes more than 4 bytes
        return len(text)
    return len(text) if text.isascii() else len(_encode(text))


def truncate(text: str, limit: OutputLimit) -> tuple[str, Truncation | None]:
    """Keep the head (or tail) of ``text`` within ``limit``; return the text and what was cut.

    Whole lines are kept where possible; only a single line longer than the byte budget is cut
    inside, at a character boundary.
    """
    if _line_count(text) <= limit.lines and _byte_size(text, limit.bytes) <= limit.bytes:
        return text, None  # the common case, told without splitting or (mostly) encoding the text
    data = _encode(text)
    lines = split_lines(text)
    ordered = lines if limit.keep == "head" else list(reversed(lines))
    kept: list[str] = []
    used = 0
    hit: Literal["lines", "bytes"] = "lines"
    for line in ordered:
        if len(kept) >= limit.lines:
            hit = "lines"
            break
        size = len(_encode(line))
        if used + size > limit.bytes:
            hit = "bytes"
            if not kept:
                piece = _cut_utf8(_encode(line), limit.bytes, limit.keep).decode("utf-8", "surrogatepass")
                kept.append(piece)
                used += len(_encode(piece))
            break
        kept.append(line)
        used += size
    if limit.keep == "tail":
        kept.reverse()
    result = "".join(kept)
    return result, Truncation(
        kept_lines=len(kept),
        total_lines=len(lines),
        kept_bytes=used,
        total_bytes=len(data),
        limit=hit,
        keep=limit.keep,
    )


def describe(cut: Truncation, limit: OutputLimit, how_to_get_more: str = "") -> str:
    """One line for the model saying what was cut and, when given, how to get more."""
    which = "first" if cut.keep == "head" else "last"
    budget = f"{limit.lines} lines" if cut.limit == "lines" else f"{limit.bytes // 1000} KB"
    note = (
        f"[output truncated: showing the {which} {cut.kept_lines} of {cut.total_lines} lines "
        f"({cut.kept_bytes} of {cut.total_bytes} bytes); limit {budget}"
    )
    return note + (f"; {how_to_get_more}]" if how_to_get_more else "]")
