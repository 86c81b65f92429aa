"""The listening socket: the connections it accepts have TCP_NODELAY, as uvicorn's own do."""

from __future__ import annotations

import asyncio
import socket


def test_accepted_connections_do_not_wait_for_delayed_acks():
    """Without TCP_NODELAY a response written in two parts waits ~40 ms for the client's ACK."""
    from crab_http.channel import _listen

    async def main() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                seen.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        listener = _listen("127.0.0.1", 0)
        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        _, writer = await asyncio.open_connection("127.0.0.1", listener.getsockname()[1])
        try:
            return await asyncio.wait_for(seen, 30)
        finally:
            writer.close()
            server.close()
            await server.wait_closed()

    assert asyncio.run(main()) != 0
