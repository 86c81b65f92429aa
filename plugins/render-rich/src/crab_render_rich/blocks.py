"""Splitting streamed Markdown into blocks: completed blocks are rendered once, only the tail lives.

``BlockSplitter.feed`` looks only at the new text (and the one unfinished line), so streaming a
message of n characters costs O(n) here, whatever its length: the renderer never re-renders
the whole message on each token.
"""

from __future__ import annotations

FENCES = ("```", "~~~")


def _fence_of(stripped: str) -> str | None:
    for mark in FENCES:
        if stripped.startswith(mark):
            char = mark[0]
            return char * (len(stripped) - len(stripped.lstrip(char)))
    return None


class BlockSplitter:
    """Feeds text, hands back each Markdown block once it is complete (blank line, closed fence,
    heading); ``tail`` is the block still being written."""

    def __init__(self) -> None:
        self._partial = ""
        self._lines: list[str] = []
        self._fence: str | None = None

    @property
    def tail(self) -> str:
        return "".join(self._lines) + self._partial

    @property
    def in_code(self) -> bool:
        return self._fence is not None

    def feed(self, text: str) -> list[str]:
        done: list[str] = []
        if "\n" not in text:
            self._partial += text
            return done
        head, *middle, rest = (self._partial + text).split("\n")
        self._partial = rest
        for line in (head, *middle):
            self._line(line + "\n", done)
        return done

    def finish(self) -> str:
        """The unfinished block (the message ended); the splitter starts afresh."""
        text = self.tail
        self._partial, self._lines, self._fence = "", [], None
        return text if text.strip() else ""

    def _emit(self, done: list[str]) -> None:
        if self._lines:
            block = "".join(self._lines)
            if block.strip():
                done.append(block)
        self._lines = []

    def _line(self, line: str, done: list[str]) -> None:
        stripped = line.strip()
        if self._fence is not None:
            self._lines.append(line)
            if stripped.startswith(self._fence) and not stripped.strip(self._fence[0]):
                self._fence = None
                self._emit(done)
            return
        fence = _fence_of(stripped)
        if fence is not None:
            self._emit(done)
            self._fence = fence
            self._lines.append(line)
        elif not stripped:
            self._emit(done)
        elif stripped.startswith("#"):
            self._emit(done)
            self._lines.append(line)
            self._emit(done)
        else:
            self._lines.append(line)
