"""A background job's output: a ring of its last bytes, read by offset, with what fell out counted.

Offsets count every byte the job ever wrote, so a reader keeps one number (where it stopped)
and learns on its next read how many bytes it missed because the ring dropped them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Chunk:
    """What one read got: the bytes from ``start`` to ``end`` and how many before them were lost."""

    data: bytes
    start: int
    end: int
    dropped: int


@dataclass
class OutputRing:
    """The last ``limit`` bytes of a stream (memory stays under twice that while it floods)."""

    limit: int
    total: int = 0
    _buffer: bytearray = field(default_factory=bytearray)
    _first: int = 0
    """Offset of ``_buffer[0]`` in the whole stream."""

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        self._buffer += data
        # Trim in bulk, as bash_log.Capture does: a flood costs a constant amount per byte.
        if len(self._buffer) > 2 * self.limit:
            cut = len(self._buffer) - self.limit
            del self._buffer[:cut]
            self._first += cut

    @property
    def kept_from(self) -> int:
        """The offset of the oldest byte still readable."""
        return max(self._first, self.total - self.limit)

    def release(self) -> None:
        """Forget what is held (everything was read): offsets and counts stay as they are."""
        self._first = self.total
        self._buffer = bytearray()

    def read(self, since: int) -> Chunk:
        """Everything written from offset ``since`` that the ring still holds."""
        start = max(since, self.kept_from)
        data = bytes(self._buffer[start - self._first :])
        return Chunk(data, start, self.total, start - since if since < start else 0)
