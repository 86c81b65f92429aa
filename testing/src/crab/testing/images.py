"""Small real images for tests: a valid PNG of any size made with the standard library only, and
the conversation with images every provider's request tests send (``image_history``)."""

from __future__ import annotations

import struct
import zlib

from crab._contracts.images import ImagePart
from crab._contracts.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage


def make_png(
    width: int = 1, height: int = 1, color: tuple[int, int, int] = (255, 0, 0), *, noise: bool = False
) -> bytes:
    """A valid RGB PNG of ``width`` x ``height`` pixels in ``color``.

    ``noise`` fills it with pseudo-random pixels instead (deterministic), so it does not
    compress: a way to make a large image file for size-cap tests.
    """

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    if noise:
        state = 12345
        rows = bytearray()
        for _ in range(height):
            rows.append(0)
            for _ in range(width * 3):
                state = (state * 1103515245 + 12345) & 0x7FFFFFFF
                rows.append(state >> 16 & 0xFF)
        raw = bytes(rows)
    else:
        raw = (b"\x00" + bytes(color) * width) * height
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def image_history(image: ImagePart | None = None) -> tuple[Message, ...]:
    """A conversation with ``image`` (a 1x1 PNG unless given) in each place an image travels: on
    the user's first message and on a tool's result (``read`` of ``shot.png``, call ``call_1``),
    then a text-only question. ``image_history()[:1]`` is the first message alone."""
    picture = image or ImagePart.from_bytes(make_png(1, 1))
    return (
        UserMessage("What is in this picture?", images=(picture,)),
        AssistantMessage(
            "Let me look at the other one.",
            tool_calls=(ToolCall("call_1", "read", {"path": "shot.png"}),),
            stop_reason="tool_use",
        ),
        ToolResultMessage("call_1", "read", "shot.png: image", images=(picture,)),
        UserMessage("Are they the same?"),
    )
