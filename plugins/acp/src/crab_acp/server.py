"""``crab acp``'s process: the protocol alone on stdout, logs in a file, and a clean end.

The editor reads stdout as JSON-RPC, so anything else written there (a plugin's print, a child
process inheriting the descriptor) would corrupt the stream. The protocol therefore gets private
copies of descriptors 0 and 1; descriptor 1 then points at stderr and descriptor 0 at
``/dev/null``. Incoming lines pass ``crab_acp.framing`` first, which answers what is not
JSON-RPC, so no input can end the connection. When the editor closes stdin every session is
aborted (each open tool call still gets its result) and every agent closed.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any, cast

from crab_acp.framing import LINE_LIMIT, filtered_reader


class _PipeProtocol(asyncio.BaseProtocol):
    """Flow control for the protocol's stdout writer (what ``asyncio.StreamWriter.drain`` awaits)."""

    def __init__(self) -> None:
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    def connection_lost(self, exc: Exception | None) -> None:
        self.resume_writing()

    async def _drain_helper(self) -> None:
        if self._paused:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter


def _private_stdio() -> tuple[int, int]:
    """Descriptors for the protocol (copies of 0 and 1); 0 becomes /dev/null and 1 stderr."""
    proto_in, proto_out = os.dup(0), os.dup(1)
    sys.stdout.flush()
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return proto_in, proto_out


async def _streams(proto_in: int, proto_out: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    raw = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(raw), os.fdopen(proto_in, "rb", buffering=0))
    protocol = _PipeProtocol()
    transport, _ = await loop.connect_write_pipe(lambda: protocol, os.fdopen(proto_out, "wb", buffering=0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return raw, writer


async def _serve(proto_in: int, proto_out: int, options: dict[str, Any]) -> None:
    from acp.core import AgentSideConnection

    from crab_acp.agent import CrabAcpAgent

    raw, writer = await _streams(proto_in, proto_out)
    reader, pump = filtered_reader(raw, writer)
    agent = CrabAcpAgent(**options)
    connection = AgentSideConnection(cast("Any", agent), writer, reader, listening=False)
    try:
        await connection.listen()
    finally:
        pump.cancel()
        await agent.shutdown()
        await asyncio.shield(connection.close())
        writer.close()


def _check(model: str | None, provider: str | None, store: str | None) -> None:
    """A model, provider or store the flags name that cannot be had is the user's error: one line
    and exit 2 now (crab's ``CrabError``), not an error in every session the editor opens."""
    import crab

    crab.Agent(model, provider=provider, store=store).close()  # chosen when made; never started


def serve(*, model: str | None, provider: str | None, store: str | None) -> int:
    """Serve one editor on stdio until it disconnects; 0 then (crab's CLI ends leftover processes)."""
    from crab_acp.logs import install

    if model or provider or store:
        _check(model, provider, store)
    log = install()
    proto_in, proto_out = _private_stdio()
    log.info("crab acp started (pid %d)", os.getpid())
    asyncio.run(_serve(proto_in, proto_out, {"model": model, "provider": provider, "store": store}))
    log.info("crab acp ended: the client closed the connection")
    return 0
