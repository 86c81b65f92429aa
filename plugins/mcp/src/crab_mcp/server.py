"""One MCP server as crab sees it: an owner task holding its client, its status and its tools.

The SDK's ``Client`` (and the task groups inside it) must be entered and left by one task, so
``ServerLink`` runs an owner task per server that connects, lists the tools, then holds the
connection until ``stop``. Calls come from any task. Connecting is bounded by
``connect_timeout``, ending the server included: a server that fails to start is killed at once,
without the shutdown grace a running one gets. A server whose connection closes (it crashed, or
sent a message over ``max_message``) or that lets a call time out is dropped: its process is
ended (after a timeout the MCP way: the SDK's ``notifications/cancelled`` for the call goes out,
then stdin closes and the server has its grace) and the next call starts it again, waiting
out a backoff that doubles with each failed start. A stdio server's stderr, the lines it prints
on stdout that are not JSON-RPC, and the SDK's log records about any server go to that server's
log file, never to crab's terminal, masked and bounded (``crab_mcp.logpump``, ``crab_mcp.stdio``, ``crab_mcp.sdklog``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import warnings
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crab_mcp.errors import describe_failure, http_status_line, message_too_large
from crab_mcp.peer import Peer
from crab_mcp.settings import ServerConfig, child_env, resolve_refs

if TYPE_CHECKING:
    from crab import ToolContext
    from mcp import types

    from crab_mcp.http_client import HttpWatch
    from crab_mcp.logpump import LogSink
    from crab_mcp.stdio import Starter, StdioTransport

Connector = Callable[[AsyncExitStack], Any]
"""Builds what ``mcp.Client`` connects to (a transport, or a server object in tests), entering
whatever it needs (log file, HTTP client) on the given stack."""

BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0
SHUTDOWN_GRACE = 5.0
STOP_GRACE_READY = 2.0
"""Seconds a started stdio server may take to exit once its stdin closes (then it is ended)."""
MAX_LOG_BYTES = 5_000_000
"""What one start of a server may write to its log (``crab_mcp.logpump``)."""


class ServerDown(Exception):
    """The server is not connected and may not be started again yet (or failed to start)."""


class CallFailed(Exception):
    """A call got no answer: the text says why, after ``MCP server 'NAME' ``."""


def client_info() -> Any:
    """How crab introduces itself in ``initialize``: ``crab`` and its version."""
    import crab
    from mcp.types import Implementation

    from crab_mcp._version import version

    return Implementation(name="crab", title=f"crab (crab-mcp {version()})", version=crab.__version__)


class ServerLink:
    """One configured server: ``start``, ``call``, ``stop``; ``status`` and ``reason`` say how it is."""

    def __init__(
        self,
        config: ServerConfig,
        log_dir: Path | None = None,
        *,
        connector: Connector | None = None,
        environ: Mapping[str, str] | None = None,
        mode: str = "legacy",
    ) -> None:
        self.config = config
        self.log_dir = log_dir
        self.connector = connector
        self.environ = os.environ if environ is None else environ
        self.mode = mode
        self.status = "stopped"
        self.reason = ""
        self.tools: list[types.Tool] = []
        self.resources: list[types.Resource] = []
        self.templates: list[types.ResourceTemplate] = []
        self.prompts: list[types.Prompt] = []
        self.protocol = ""
        self.on_change: list[Callable[[ServerLink, str], None]] = []
        """Called with (link, "tools" | "resources" | "prompts") after a list was fetched again
        (the server said it changed, or crab connected again)."""
        self.on_update: list[Callable[[ServerLink, str], None]] = []
        """Called with (link, uri) when the server says a subscribed resource changed."""
        self.on_ready: list[Callable[[ServerLink], None]] = []
        """Called with the link each time a connection is ready (the first and every restart)."""
        self.on_lost: list[Callable[[ServerLink], None]] = []
        """Called with the link when a stdio server exited by itself while connected."""
        self.can_subscribe = False
        """The server offers ``resources.subscribe``."""
        self.subscribed: set[str] = set()
        """URIs subscribed to on the current connection (``crab_mcp.subscriptions``)."""
        self.peer = Peer(config.name, self._relist, self._updated)
        self.extra_roots: list[Path] = []
        self.workspace: Path | None = None
        self.agent_config: Any = None
        """The config of the agent this server serves (``crab_startup``), for the command wrappers."""
        self._client: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._failures = 0
        self._retry_at = 0.0
        self._stdio: StdioTransport | None = None
        self._http: HttpWatch | None = None
        self._sink: LogSink | None = None

    @property
    def name(self) -> str:
        name: str = self.config.name
        return name

    @property
    def log_path(self) -> Path | None:
        """The server's log: its stderr and stray stdout (stdio), the SDK's records about it (both)."""
        if self.log_dir is None:
            return None
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.name)
        return self.log_dir / f"{safe}.log"

    @property
    def _log_hint(self) -> Path | None:
        """The log to point at in a failure: a stdio server's, where its own words are."""
        return self.log_path if self.config.transport == "stdio" else None

    # --- connecting -----------------------------------------------------------------------

    async def _transport(self, stack: AsyncExitStack) -> Any:
        if self.connector is not None:
            return self.connector(stack)
        config = self.config
        if config.url is not None:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            from crab_mcp.http_client import HttpWatch, http_client

            resolved = headers = resolve_refs(config.headers, self.environ, "header")
            self._http = watch = HttpWatch()
            if config.transport == "sse":
                from mcp.client.sse import sse_client

                def factory(
                    headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None
                ) -> httpx2.AsyncClient:
                    # crab's client (its headers, timeouts and bound on each body), not the SDK's.
                    return http_client(resolved, config.connect_timeout, config.timeout, config.max_message, watch)

                return sse_client(config.url, httpx_client_factory=factory, sse_read_timeout=max(300.0, config.timeout))
            http = http_client(headers, config.connect_timeout, config.timeout, config.max_message, watch)
            await stack.enter_async_context(http)
            return streamable_http_client(config.url, http_client=http, max_sse_event_size=config.max_message)
        from crab_mcp.logpump import start_pump
        from crab_mcp.stdio import StdioTransport

        env = child_env(config, self.environ)
        cwd = config.cwd
        if cwd is not None and not Path(cwd).is_dir():
            raise FileNotFoundError(f"cwd {cwd} is not a folder")
        if self._sink is not None:
            stderr: Any = stack.enter_context(start_pump(self._sink, self.name))
        else:
            stderr = asyncio.subprocess.DEVNULL
        self._stdio = StdioTransport(
            config.command or "",
            config.args,
            env,
            cwd,
            stderr=stderr,
            log=self._sink,
            max_message=config.max_message,
            starter=self._starter(),
        )
        return self._stdio.connect()

    def _starter(self) -> Starter:
        """This server as a command wrapper sees its start: ``mcp:NAME``, the server's permission
        class, and the agent's config and workspace (in a context without a session or call)."""
        from crab import ToolContext

        from crab_mcp.stdio import Starter

        context = None
        if self.agent_config is not None:
            workspace = self.workspace or Path.cwd()
            context = ToolContext(session_id="", workspace=workspace, config=self.agent_config)
        return Starter(f"mcp:{self.name}", self.config.permission, context)

    def _open_log(self) -> LogSink | None:
        """This start's log, masking the server's ``${VAR}`` values and every secret crab knows."""
        from crab.secrets import known_secrets

        from crab_mcp.logpump import LogSink
        from crab_mcp.settings import secret_values

        path = self.log_path
        if path is None:
            return None
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        log = open(path, "a", encoding="utf-8", errors="replace")  # noqa: SIM115 - the sink closes it
        log.write(f"--- crab started {self.name} at {time.strftime('%Y-%m-%d %H:%M:%S')} ---\n")
        log.flush()
        secrets = [*secret_values(self.config, self.environ), *known_secrets(env=self.environ)]
        return LogSink(log, secrets, MAX_LOG_BYTES)

    def _http_line(self) -> str:
        watch = self._http
        if watch is None or not watch.status:
            return ""
        return http_status_line(watch.status, watch.reason, self.name, self.config.headers)

    async def _own(self, ready: asyncio.Future[None]) -> None:
        from mcp import Client

        from crab_mcp import sdklog

        assert self._stop is not None
        sdklog.install()
        self._stdio, self._http = None, None
        sink = self._sink = self._open_log()
        sdklog.current.set(sink)  # this task's context: the SDK's tasks below inherit it
        try:
            async with AsyncExitStack() as stack:
                if sink is not None:
                    stack.callback(sink.close)
                transport = await self._transport(stack)
                peer = self.peer
                peer.sink = sink
                if self.workspace is not None:
                    peer.set_roots(self.workspace, self.extra_roots)
                client = Client(
                    transport,
                    mode=self.mode,
                    # Past crab's own deadline, so the failure is crab's "did not answer within".
                    read_timeout_seconds=self.config.connect_timeout + 5.0,
                    cache=None,
                    client_info=client_info(),
                    message_handler=peer.message,
                    logging_callback=peer.log,
                    # None: the roots capability is not declared (the server's `roots = false`).
                    list_roots_callback=peer.list_roots if self.config.declare_roots else None,
                    sampling_callback=peer.sampling,
                    elicitation_callback=peer.elicitation,
                )
                await stack.enter_async_context(client)
                stack.callback(peer.cancel)
                self.subscribed = set()  # a new connection has none
                self.tools = await _list_all(client)
                await self._list_extras(client)
                self.protocol = str(getattr(client, "protocol_version", "") or "")
                if self._stdio is not None:
                    self._stdio.grace = STOP_GRACE_READY
                self._client = client
                self.status, self.reason = "ready", ""
                if not ready.done():
                    ready.set_result(None)
                for kind in ("tools", "resources", "prompts"):
                    self._changed(kind)  # a server started again may offer other tools than before
                self._tell(self.on_ready, "ready")
                await self._hold()
        except asyncio.CancelledError:
            if not ready.done():
                ready.set_exception(ServerDown(f"did not answer within {self.config.connect_timeout:g} s"))
            raise
        except (Exception, BaseExceptionGroup) as exc:  # the SDK raises nested groups, OSError, MCPError…
            reason = describe_failure(exc, self._log_hint, self._http_line())
            if not ready.done():
                ready.set_exception(ServerDown(reason))
            elif self.status == "ready":
                self.status, self.reason = "down", reason
        finally:
            self._client = None

    async def _hold(self) -> None:
        """Until ``stop``; or until a stdio server's process exits by itself, which marks it
        down at once (the next call starts it again, and a listener may start it now)."""
        assert self._stop is not None
        stdio = self._stdio
        if stdio is None:
            await self._stop.wait()
            return
        waits = {asyncio.ensure_future(self._stop.wait()), asyncio.ensure_future(stdio.exited())}
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        if self._stop.is_set() or self.status != "ready":
            return
        self.status, self.reason = "down", stdio.failure or "the server exited (see its log)"
        self._retry_at = 0.0
        self._tell(self.on_lost, "lost")

    def _tell(self, listeners: list[Callable[[ServerLink], None]], what: str) -> None:
        for listener in list(listeners):
            try:
                listener(self)
            except Exception as exc:
                self.peer._note(f"a {what} listener failed: {type(exc).__name__}: {exc}")

    @property
    def retry_in(self) -> float:
        """Seconds until a failed server may be started again (0 when it may now)."""
        return max(0.0, self._retry_at - time.monotonic()) if self.status == "failed" else 0.0

    async def start(self) -> None:
        """Connect and list tools within ``connect_timeout``; ``ServerDown`` says why not."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.status == "ready" and self._client is not None:
                return
            await self._end_owner()
            self.status, self.reason = "starting", ""
            self._stop = asyncio.Event()
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            ready.add_done_callback(_retrieve)  # a failure after our deadline is not "never retrieved"
            self._owner = asyncio.create_task(self._own(ready), name=f"crab-mcp-{self.name}")
            try:
                await asyncio.wait_for(asyncio.shield(ready), self.config.connect_timeout)
            except TimeoutError:
                # Ended at once (a server that is not ready gets no shutdown grace), so start-up
                # costs connect_timeout and not a moment more.
                await self._end_owner(cancel=True)
                log = f" (see its log: {self._log_hint})" if self._log_hint is not None else ""
                self._failed(f"did not answer within {self.config.connect_timeout:g} s{log}")
                raise ServerDown(self.reason) from None
            except ServerDown as exc:
                await self._end_owner()
                self._failed(str(exc))
                raise
            self._failures = 0

    def _failed(self, reason: str) -> None:
        self.status, self.reason = "failed", reason
        self._failures += 1
        delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (self._failures - 1))
        self._retry_at = time.monotonic() + delay

    async def _end_owner(self, *, cancel: bool = False) -> None:
        """Let the owner leave its connection (closing the child), cancelling it when it does not."""
        owner, self._owner = self._owner, None
        if owner is None:
            return
        if self._stop is not None:
            self._stop.set()
        if cancel and self._stdio is not None:
            await self._stdio.kill()
        try:
            await asyncio.wait_for(asyncio.shield(owner), 0 if cancel else SHUTDOWN_GRACE)
        except TimeoutError:
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)
        except BaseException:
            pass  # the owner reported its own failure
        self._client = None

    async def _drop(self, reason: str, *, polite: bool = False) -> None:
        """Mark the server down and end its connection; the next call starts it again. At once,
        or (``polite``) the MCP way: what crab already sent goes out (the SDK's
        ``notifications/cancelled`` for a call that timed out), then stdin closes and the server
        has its shutdown grace before it is signalled, so it can stop that call's work itself."""
        self.status, self.reason = "down", reason
        self._retry_at = 0.0
        if self._stdio is not None and not polite:
            await self._stdio.kill()
        if self._stop is not None:
            self._stop.set()

    async def stop(self) -> None:
        """End the connection (and the child process); safe to call more than once. A server
        still connecting (it never answered) is ended at once, without the shutdown grace."""
        await self._end_owner(cancel=self.status == "starting")
        if self.status in ("ready", "down", "starting"):
            self.status = "stopped"

    # --- calling ----------------------------------------------------------------------------

    async def ensure(self) -> Any:
        """The connected client, starting the server again if it is down and its backoff is over."""
        if self.status == "ready" and self._client is not None:
            return self._client
        wait = self._retry_at - time.monotonic()
        if self.status in ("failed",) and wait > 0:
            raise ServerDown(f"{self.reason}; crab tries again in {wait:.0f} s")
        try:
            await self.start()
        except ServerDown as exc:
            raise ServerDown(f"failed to start: {exc}") from None
        return self._client

    async def call(
        self, tool: str, arguments: Mapping[str, Any], ctx: ToolContext | None = None
    ) -> types.CallToolResult:
        """One ``tools/call``, always with a progress token (the server's progress becomes notices
        of ``ctx``'s session). ``CallFailed`` when there is no answer: a closed connection, a
        message over ``max_message`` or a timeout drops the link (the next call starts the
        server again); a JSON-RPC error leaves it up. While it runs, ``ctx`` is whom the
        server's elicitation asks."""
        from mcp import MCPError

        from crab_mcp import sdklog
        from crab_mcp.progress import Progress
        from crab_mcp.trace_context import trace_meta

        client = await self.ensure()
        if ctx is not None:
            await self._announce(client, ctx.workspace)
            self.peer.calls.append(ctx)
        # The SDK handles an HTTP request in the caller's task: its records go to this server's log.
        token = sdklog.current.set(self._sink)
        try:
            result: types.CallToolResult = await client.call_tool(
                tool,
                dict(arguments),
                read_timeout_seconds=self.config.timeout,
                progress_callback=Progress(self.name, tool, ctx),
                meta=trace_meta("tools/call"),
            )
        except MCPError as exc:
            raise CallFailed(await self._call_failure(tool, exc)) from None
        finally:
            sdklog.current.reset(token)
            if ctx is not None:
                self.peer.calls.remove(ctx)
        return result

    async def request(self, what: str, method: str, *args: Any) -> Any:
        """Another request of the connected client (``read_resource``, ``get_prompt``…), with the
        same failure rules as a tool call."""
        from mcp import MCPError

        from crab_mcp import sdklog

        client = await self.ensure()
        token = sdklog.current.set(self._sink)
        try:
            return await getattr(client, method)(*args)
        except MCPError as exc:
            raise CallFailed(await self._call_failure(what, exc)) from None
        finally:
            sdklog.current.reset(token)

    async def _announce(self, client: Any, workspace: Path) -> None:
        """Tell the server its roots changed when this call runs in another workspace."""
        if not self.config.declare_roots or not self.peer.set_roots(workspace, self.extra_roots):
            return
        with contextlib.suppress(Exception), warnings.catch_warnings():
            # Deprecated only for 2026-07-28 connections, which crab does not make (legacy mode).
            warnings.simplefilter("ignore")
            await client.session.send_roots_list_changed()  # a server gone is the call's failure

    # --- lists --------------------------------------------------------------------------

    async def _list_extras(self, client: Any) -> None:
        """Resources, their templates and prompts, of a server that declares them. Each is
        optional: a listing the server refuses (-32601 Method not found, or another JSON-RPC
        error) is left empty with a line in its log, and its tools still work."""
        caps = getattr(client, "server_capabilities", None)
        if caps is not None and caps.resources is not None:
            self.can_subscribe = bool(caps.resources.subscribe)
            self.resources = await self._optional(client.list_resources, "resources")
            self.templates = await self._optional(client.list_resource_templates, "resource_templates")
        if caps is not None and caps.prompts is not None:
            self.prompts = await self._optional(client.list_prompts, "prompts")

    async def _optional(self, method: Callable[..., Any], field: str) -> list[Any]:
        """Every page of an optional listing; ``[]`` when the server answers it with an error.
        A closed connection or a timeout is still the server's failure (raised)."""
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        try:
            return await _pages(method, field)
        except MCPError as exc:
            if exc.code in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
                raise
            what = field.replace("_", " ")
            self.peer._note(f"the server declares {what} but refused to list them (error {exc.code}: {exc.message})")
            return []

    async def _relist(self, kind: str) -> None:
        """Fetch ``kind`` again (the server said it changed), then tell the listeners."""
        client = self._client
        if client is None:
            return
        try:
            if kind == "tools":
                self.tools = await _list_all(client)
            else:
                await self._list_extras(client)
        except Exception as exc:  # a relist that fails keeps the old list; the log says why
            self.peer._note(f"listing {kind} again failed: {type(exc).__name__}: {exc}")
            return
        self._changed(kind)

    def _updated(self, uri: str) -> None:
        for listener in list(self.on_update):
            try:
                listener(self, uri)
            except Exception as exc:
                self.peer._note(f"an update listener failed: {type(exc).__name__}: {exc}")

    def _changed(self, kind: str) -> None:
        for listener in list(self.on_change):
            try:
                listener(self, kind)
            except Exception as exc:
                self.peer._note(f"a {kind} change listener failed: {type(exc).__name__}: {exc}")

    async def _call_failure(self, tool: str, exc: Any) -> str:
        """Why ``tool`` got no answer, dropping the link where it cannot be trusted any more."""
        from mcp.types import CONNECTION_CLOSED, INTERNAL_ERROR, PARSE_ERROR, REQUEST_TIMEOUT

        oversized = self._http is not None and self._http.oversized
        too_large = message_too_large(self.config.max_message)
        again = (
            "crab ended the server and starts it again on the next call"
            if self._stdio is not None
            else "crab closed the connection and opens a new one on the next call"
        )
        if exc.code == CONNECTION_CLOSED:
            why = self._stdio.failure if self._stdio is not None else too_large if oversized else None
            if why is None:
                await self._drop("the connection closed (the server exited; see its log)")
                return f"closed the connection during {tool} (it crashed); crab starts it again on the next call"
            await self._drop(why)
            return f"{why} in answer to {tool}; {again}"
        if exc.code == REQUEST_TIMEOUT:
            # A late answer could still be on its way (or never end): a fresh link is the only
            # state crab can trust for the next call. The SDK has sent notifications/cancelled
            # for the call (with the request id and "timed out after …"): the polite close lets
            # the server read it before its stdin ends.
            await self._drop(f"did not answer {tool} within {self.config.timeout:g} s", polite=True)
            return f"did not answer {tool} within {self.config.timeout:g} s; {again}"
        if exc.code == PARSE_ERROR and oversized:
            await self._drop(too_large)
            return f"{too_large} in answer to {tool}; {again}"
        http = self._http_line()
        if exc.code == INTERNAL_ERROR and http:
            return f"refused {tool}: {http}"
        return f"refused {tool}: error {exc.code}: {exc.message}"


def _retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


async def _list_all(client: Any) -> list[types.Tool]:
    """Every page of ``tools/list`` (the SDK does not follow ``next_cursor``)."""
    tools: list[types.Tool] = await _pages(client.list_tools, "tools")
    return tools


async def _pages(method: Callable[..., Any], field: str) -> list[Any]:
    """Every page of one ``*/list`` request, cut off after 1,000 pages (a server that pages forever)."""
    found: list[Any] = []
    cursor: str | None = None
    for _ in range(1000):
        page = await method(cursor=cursor)
        found.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return found
