"""Small text facts shared by the file and search tools: binary sniffing and line cutting."""

from __future__ import annotations

SNIFF_BYTES = 8192
MAX_LINE_CHARS = 500
BOM = b"\xef\xbb\xbf"


def looks_binary(head: bytes) -> bool:
    """Git's rule: a NUL byte in the first 8 KB means binary (this also catches UTF-16)."""
    return b"\0" in head[:SNIFF_BYTES]


def cut_line(line: str, limit: int = MAX_LINE_CHARS) -> str:
    """``line`` at most ``limit`` characters long, saying how much was dropped."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]}… [{len(line) - limit} more characters]"
