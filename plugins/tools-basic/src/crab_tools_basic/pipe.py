"""What a foreground ``bash`` call and a background job share: the shell they run, and the
protocol that feeds a command's output pipe to whatever keeps it (a capture, a ring)."""

from __future__ import annotations

import asyncio
import shutil
from typing import Protocol


def shell() -> str:
    """bash where it is installed, else ``/bin/sh``."""
    return shutil.which("bash") or "/bin/sh"


class Feeds(Protocol):
    def feed(self, data: bytes) -> object: ...


class PipeSink(asyncio.Protocol):
    """Feeds the pipe's bytes to ``target``; resolves ``closed`` at end of file."""

    def __init__(self, target: Feeds, closed: asyncio.Future[None]) -> None:
        self.target = target
        self.closed = closed

    def data_received(self, data: bytes) -> None:
        self.target.feed(data)

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)
