"""Splits ``<think>…</think>`` reasoning out of streamed content, for servers (Ollama, llama.cpp,
vLLM without a reasoning parser) that inline a reasoning model's thoughts in the text.
"""

from __future__ import annotations

OPEN = "<think>"
CLOSE = "</think>"


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that is a proper beginning of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


class ThinkTagSplitter:
    """Feed content deltas; get ``(is_thinking, text)`` pieces back, tags removed.

    An opening tag counts only before any visible text, so a model writing *about* the tag in
    its answer is left alone. A tag split across deltas is held back until it is decided.
    """

    __slots__ = ("_inside", "_passthrough", "_pending", "_trim")

    def __init__(self) -> None:
        self._pending = ""
        self._inside = False
        self._passthrough = False
        self._trim = False

    @property
    def passthrough(self) -> bool:
        """True once visible text has started: from then on content passes through untouched."""
        return self._passthrough

    def feed(self, text: str) -> list[tuple[bool, str]]:
        if self._passthrough:
            return [(False, text)]
        buffer = self._pending + text
        self._pending = ""
        out: list[tuple[bool, str]] = []
        while buffer:
            if self._inside:
                end = buffer.find(CLOSE)
                if end >= 0:
                    if end:
                        out.append((True, buffer[:end]))
                    buffer = buffer[end + len(CLOSE) :]
                    self._inside = False
                    # The answer after a thought usually starts with blank lines; they are noise.
                    self._trim = True
                    continue
                keep = _partial_suffix(buffer, CLOSE)
                if len(buffer) > keep:
                    out.append((True, buffer[: len(buffer) - keep]))
                self._pending = buffer[len(buffer) - keep :]
                break
            stripped = buffer.lstrip()
            if not stripped:
                if not self._trim:
                    self._pending = buffer
                break
            if not self._trim and stripped.startswith(OPEN):
                self._inside = True
                buffer = stripped[len(OPEN) :]
                continue
            if not self._trim and OPEN.startswith(stripped):
                self._pending = buffer
                break
            out.append((False, stripped if self._trim else buffer))
            self._passthrough = True
            break
        return out

    def flush(self) -> list[tuple[bool, str]]:
        """End of content: whatever was held back, as what it turned out to be."""
        pending, self._pending = self._pending, ""
        if not pending:
            return []
        if self._inside:
            return [(True, pending)]
        return [] if self._trim and not pending.strip() else [(False, pending)]
