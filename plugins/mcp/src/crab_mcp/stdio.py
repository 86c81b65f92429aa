"""A stdio server's process and its newline-delimited JSON-RPC, each incoming message bounded.

crab starts the server itself, through ``crab.processes`` (its own process group, tagged and
tracked, so crab's exit ends it and everything it forked; its command passes through
``wrap_command`` as the tool ``mcp:NAME``, so an OS sandbox such as crab-sandbox may wrap it),
rather than through the SDK's ``stdio_client``, for what that transport cannot do: a message
longer than ``max_message`` bytes ends the connection at once (the pending calls fail, the process
is ended, crab starts it again on the next call) instead of being buffered whole, which left a
server that sent 50 MB stuck and crab's memory growing; a line on stdout that is not JSON-RPC goes
to the server's log, not as the SDK's traceback to the terminal; and ``kill`` ends the process at
once, so a start that failed or a link crab drops costs no shutdown grace. A normal close keeps
the MCP order: close stdin, wait up to ``grace`` seconds for the server to exit, then TERM and
KILL; until the link sets ``grace`` (the server answered and listed its tools) there is none.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from crab_mcp.logpump import LogSink

CHUNK = 65536
TERM_GRACE = 1.0
"""Seconds between TERM and KILL on a normal close."""
WRITE_DRAIN = 1.0
"""Seconds a normal close waits for the messages already handed to the writer to go out."""
REAP = 2.0
"""Seconds to wait for the exit status of a killed process (only an unkillable one runs it out)."""
JUNK = "[stdout, not JSON-RPC] "


@dataclass(frozen=True, slots=True)
class Starter:
    """Whose start this is, for ``crab.processes.wrap_command``: the tool name a command wrapper
    sees (``mcp:NAME``), the server's permission class, and a ``crab.ToolContext`` carrying the
    agent's config and workspace (None outside an agent: no wrapper then knows whose it is)."""

    tool: str
    permission: str
    context: Any = None


class StdioTransport:
    """One start of a stdio server; ``connect()`` is what ``mcp.Client`` enters."""

    def __init__(
        self,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
        *,
        stderr: IO[str] | int,
        log: LogSink | None,
        max_message: int,
        grace: float = 0.0,
        starter: Starter | None = None,
    ) -> None:
        self.command = command
        self.args = list(args)
        self.env = dict(env)
        self.cwd = cwd
        self.stderr = stderr
        self.log = log
        self.max_message = max_message
        self.grace = grace
        """Seconds the server may take to exit once its stdin closes; 0: it is ended at once."""
        self.starter = starter
        self.failure: str | None = None
        """Why crab ended the connection itself (a message over ``max_message``), if it did."""
        self._process: asyncio.subprocess.Process | None = None
        self._tag = ""
        self._killed = False

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[tuple[Any, Any]]:
        """Start the process and yield the (read, write) streams of ``SessionMessage``."""
        import anyio
        from crab import processes
        from mcp.shared.message import SessionMessage

        tag = processes.new_tag()
        who = self.starter or Starter("mcp", "network")
        argv = processes.wrap_command(
            [self.command, *self.args], self.cwd, tool=who.tool, permission=who.permission, context=who.context
        )
        process = await processes.start(  # tracked; a cancel mid-start ends what started
            argv,
            tag,
            env=self.env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self.stderr,
            cwd=self.cwd,
        )
        self._process, self._tag = process, tag
        incoming, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
        assert process.stdout is not None
        assert process.stdin is not None
        reader = asyncio.create_task(self._read(process.stdout, incoming), name="crab-mcp-stdout")
        writer = asyncio.create_task(self._write(process.stdin, outgoing, incoming), name="crab-mcp-stdin")
        try:
            yield read_stream, write_stream
        finally:
            # Bounded throughout, and shielded: a cancelled owner must not leave the process behind.
            with anyio.CancelScope(shield=True):
                read_stream.close()  # the reader now drains stdout, so a writing server can exit
                write_stream.close()
                if not self._killed and self.grace > 0:
                    # What the session handed over last (a notifications/cancelled) goes out first.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(asyncio.shield(writer), WRITE_DRAIN)
                writer.cancel()
                await asyncio.gather(writer, return_exceptions=True)
                await self._stop(process)
                reader.cancel()
                await asyncio.gather(reader, return_exceptions=True)
                incoming.close()
                outgoing.close()
                processes.untrack(process.pid)

    async def exited(self) -> None:
        """Return once the process has exited (for whatever reason)."""
        process = self._process
        if process is not None:
            await process.wait()

    async def kill(self) -> None:
        """End the process (and everything it forked) now; the connection then closes."""
        from crab import processes

        self._killed = True
        process = self._process
        if process is not None and process.returncode is None:
            await asyncio.to_thread(processes.terminate, process.pid, self._tag, 0.0)

    async def _stop(self, process: asyncio.subprocess.Process) -> None:
        from crab import processes

        gentle = not self._killed and self.grace > 0
        if gentle and process.stdin is not None:
            process.stdin.close()
            with contextlib.suppress(TimeoutError, OSError):
                await asyncio.wait_for(process.wait(), self.grace)
        # Also when the server exited: what it forked may still run in its group.
        grace = TERM_GRACE if gentle else 0.0
        await asyncio.to_thread(processes.terminate, process.pid, self._tag, grace)
        with contextlib.suppress(TimeoutError, OSError):
            await asyncio.wait_for(process.wait(), REAP)

    async def _read(self, stdout: asyncio.StreamReader, incoming: Any) -> None:
        import anyio

        try:
            async with incoming:  # closing it is how the session learns the connection ended
                await self._deliver_lines(stdout, incoming)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the session is gone: what the server still writes is drained below
        except Exception as exc:  # a broken pipe: the session sees the connection close
            if self.log is not None:
                self.log.line(f"reading stdout failed: {type(exc).__name__}: {exc}", prefix="[crab] ")
        with contextlib.suppress(Exception):
            while await stdout.read(CHUNK):
                pass

    async def _deliver_lines(self, stdout: asyncio.StreamReader, incoming: Any) -> None:
        from mcp.shared.message import SessionMessage
        from mcp.types import jsonrpc_message_adapter

        buffer = bytearray()
        scanned = 0  # no newline in buffer[:scanned]: a long line is searched once, not per chunk
        while True:
            chunk = await stdout.read(CHUNK)
            if not chunk:
                return
            buffer += chunk
            start = 0
            while (end := buffer.find(b"\n", scanned)) >= 0:
                if end - start > self.max_message:
                    await self._oversized()
                    return
                line = bytes(buffer[start:end]).rstrip(b"\r")
                start = scanned = end + 1
                if not line.strip():
                    continue
                try:
                    message = jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError:  # not JSON, or JSON that is no JSON-RPC message
                    if self.log is not None:
                        self.log.line(line.decode("utf-8", "replace"), prefix=JUNK)
                    continue
                await incoming.send(SessionMessage(message))
            del buffer[:start]
            scanned = len(buffer)
            if len(buffer) > self.max_message:
                await self._oversized()
                return

    async def _oversized(self) -> None:
        from crab_mcp.errors import message_too_large

        self.failure = message_too_large(self.max_message)
        if self.log is not None:
            self.log.line(f"{self.failure}; crab ended the server", prefix="[crab] ")
        await self.kill()

    async def _write(self, stdin: asyncio.StreamWriter, outgoing: Any, incoming: Any) -> None:
        import anyio

        try:
            async with outgoing:
                async for message in outgoing:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    stdin.write(text.encode("utf-8", "replace") + b"\n")
                    await stdin.drain()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server stopped reading (or exited): end the session's wait for replies.
            await incoming.aclose()
