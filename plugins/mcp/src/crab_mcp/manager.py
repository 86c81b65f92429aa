"""Every configured server of one run: started in parallel, their tools as crab ``Tool`` objects.

``Manager.start`` starts all enabled servers at once, each bounded by its connect timeout, so
start-up costs about the slowest server, not the sum, and with a ``wait`` (``startup_wait``) no
more than that: a slower server goes on connecting in the background (``finish``) and its tools
join through ``attach``'s register when it is ready; one that fails is reported and the others
work. ``tools()`` names each MCP tool ``<prefix><tool>`` (``crab_mcp.names``), with the
server's schema, its description's first line first (the one line a tool list shows), the
permission class from config and a timeout that covers a restart plus the call. A call's
``is_error`` result and any protocol error come back as error results, never exceptions.
A server's answer is masked, then fenced as the server's content (``crab_mcp.fence``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crab import Tool, ToolContext, ToolResult
from crab.config import crab_home
from crab.events import Event
from crab.storage import SessionInfo

from crab_mcp.names import crab_name
from crab_mcp.resources import offers
from crab_mcp.server import CallFailed, ServerDown, ServerLink
from crab_mcp.settings import ServerConfig
from crab_mcp.subscriptions import Watch


def log_dir() -> Path:
    """Where server stderr logs go: ``$CRAB_HOME/mcp/logs`` (outside any workspace)."""
    return crab_home() / "mcp" / "logs"


@dataclass(frozen=True)
class ToolEntry:
    """One MCP tool as crab registers it."""

    crab_name: str
    server: str
    remote: str
    permission: str
    description: str
    schema: dict[str, Any]
    wanted: str = ""

    @property
    def mapped(self) -> bool:
        """Whether the name had to change from ``<prefix><tool>`` to fit what providers accept."""
        return self.crab_name != self.wanted


MAX_DESCRIPTION = 8_000
"""Characters of a server's description kept: it goes into every request that carries the tool."""


def describe(server: str, tool: Any) -> str:
    """The crab description: the server's first line first, then the rest (cut at
    ``MAX_DESCRIPTION``), then where it comes from."""
    text = (getattr(tool, "description", None) or getattr(tool, "title", None) or "").strip()
    first, _, rest = text.partition("\n")
    first = first.strip() or f"{tool.name} (no description given)"
    body = f"{first}\n{rest.strip()}".strip() if rest.strip() else first
    if len(body) > MAX_DESCRIPTION:
        body = f"{body[:MAX_DESCRIPTION].rstrip()} [… cut: the server's description has {len(body):,} characters]"
    return f"{body}\n\n(MCP tool {tool.name!r} of server {server!r})"


def schema_of(tool: Any) -> dict[str, Any]:
    """The tool's input schema, as a provider expects it (an object schema without ``$schema``)."""
    schema = dict(getattr(tool, "input_schema", None) or {})
    schema.pop("$schema", None)
    if schema.get("type") != "object":
        schema = {"type": "object", "properties": {}, **{k: v for k, v in schema.items() if k != "type"}}
    schema.setdefault("properties", {})
    return schema


class Manager:
    """The servers of one run (see the module docstring)."""

    def __init__(self, links: Sequence[ServerLink]) -> None:
        self.links = {link.name: link for link in links}
        self.entries: dict[str, ToolEntry] = {}
        self._register: Callable[[list[Tool]], Any] | None = None
        self._resource_tools = False
        self.notice: Callable[[str], None] = lambda message: None
        """Tells the user something (``AgentHandle.notice`` once the agent started)."""
        self.session_info: Callable[[str], Awaitable[SessionInfo]] | None = None
        """A session's stored info (``AgentHandle.session_info`` once the agent started): whether
        a prompt came through a channel (``crab_mcp.attach``)."""
        self.watch = Watch(self)
        self.pending: dict[str, asyncio.Future[None]] = {}
        """Start tasks of servers still connecting after ``start``'s wait (``finish`` awaits them)."""
        self._finishing: asyncio.Future[None] | None = None
        self.started_at = time.monotonic()
        for link in links:
            link.on_change.append(self._changed)
            link.on_update.append(self.watch.updated)
            link.on_ready.append(self.watch.ready)
            link.on_lost.append(self.watch.lost)

    def emit(self, event: Event) -> None:
        """An event for the user outside a tool call (a notice about an attached resource)."""
        message = getattr(event, "message", None)
        if isinstance(message, str):
            self.notice(message)

    def attach(self, register: Callable[[list[Tool]], Any]) -> None:
        """Hand tools a server adds later (``tools/list_changed``, a restart) to ``register``
        (``AgentHandle.add_tools``), as ``start`` handed the first ones."""
        self._register = register

    def _changed(self, link: ServerLink, kind: str) -> None:
        if self._register is None:
            return
        if kind == "resources" and not self._resource_tools and offers(link):
            self._register(self.resource_tools())
            return
        if kind != "tools":
            return
        before = set(self.entries)
        self._index()
        new = [self._tool(self.entries[name]) for name in self.entries if name not in before]
        if new:
            self._register(new)

    def resource_tools(self) -> list[Tool]:
        """``mcp_resources`` and ``mcp_read_resource`` when a server offers resources (once)."""
        from crab_mcp.resources import resource_tools

        if self._resource_tools or not any(offers(link) for link in self.links.values()):
            return []
        self._resource_tools = True
        return resource_tools(self)

    @classmethod
    def from_configs(cls, configs: Sequence[ServerConfig], logs: Path | None = None) -> Manager:
        return cls([ServerLink(c, logs or log_dir()) for c in configs if c.enabled])

    async def start(self, wait: float | None = None) -> dict[str, str]:
        """Start every server at once; server name → failure reason for those that did not start.

        With ``wait``, return after at most that many seconds: a server still connecting then
        goes on in the background (up to its ``connect_timeout``), its start task in ``pending``
        (``finish`` reports it); ``tools()`` has the tools of those that were ready in time.
        """
        links = list(self.links.values())
        if not links:
            return {}
        self.started_at = time.monotonic()
        tasks = {link.name: asyncio.ensure_future(link.start()) for link in links}
        try:
            await asyncio.wait(tasks.values(), timeout=wait)
        except BaseException:  # cancelled (Ctrl-C while starting): no start goes on unowned
            for task in tasks.values():
                task.cancel()
            await asyncio.gather(*tasks.values(), return_exceptions=True)
            await asyncio.gather(*(link.stop() for link in links), return_exceptions=True)
            raise
        failed: dict[str, str] = {}
        for link in links:
            task = tasks[link.name]
            if not task.done():
                self.pending[link.name] = task
                continue
            reason = _failure(link, task)
            if reason is not None:
                failed[link.name] = reason
        self._index()
        return failed

    async def finish(self, report: Callable[[str, float, str | None], None]) -> None:
        """Wait for the servers ``start`` left connecting; ``report(name, seconds, failure)`` for
        each as it ends (its tools joined through ``attach``'s register by then)."""

        async def one(name: str, task: asyncio.Future[None]) -> None:
            await asyncio.wait({task})
            self.pending.pop(name, None)
            report(name, time.monotonic() - self.started_at, _failure(self.links[name], task))

        await asyncio.gather(*(one(name, task) for name, task in list(self.pending.items())))

    def finish_in_background(self, report: Callable[[str, float, str | None], None]) -> None:
        """``finish`` as a task of its own; ``stop`` ends it (and the starts it waits for)."""
        if self.pending:
            self._finishing = asyncio.ensure_future(self.finish(report))

    async def stop(self) -> None:
        """End the starts still under way, unsubscribe from resources, then stop every server."""
        waiting = [t for t in (self._finishing, *self.pending.values()) if t is not None and not t.done()]
        for task in waiting:
            task.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        self.pending.clear()
        await self.watch.stop()
        await asyncio.gather(*(link.stop() for link in self.links.values()), return_exceptions=True)

    def _index(self, taken: Mapping[str, Any] | None = None) -> None:
        used = set(taken or ())
        for link in self.links.values():
            config = link.config
            for tool in link.tools:
                if not config.wants(tool.name):
                    continue
                existing = next(
                    (e for e in self.entries.values() if e.server == link.name and e.remote == tool.name), None
                )
                if existing is not None:
                    used.add(existing.crab_name)
                    continue
                name = crab_name(config.tool_prefix, tool.name, used | set(self.entries))
                used.add(name)
                self.entries[name] = ToolEntry(
                    crab_name=name,
                    server=link.name,
                    remote=tool.name,
                    permission=config.permission_of(tool.name),
                    description=describe(link.name, tool),
                    schema=schema_of(tool),
                    wanted=f"{config.tool_prefix}{tool.name}",
                )

    def tools(self) -> list[Tool]:
        """A crab ``Tool`` for every listed MCP tool that ``include``/``exclude`` let through."""
        return [self._tool(entry) for entry in self.entries.values()]

    def _tool(self, entry: ToolEntry) -> Tool:
        link = self.links[entry.server]

        async def handler(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
            if link.status == "ready" and all(t.name != entry.remote for t in link.tools):
                return ToolResult(
                    f"MCP server {link.name!r} no longer offers {entry.remote!r} (it changed its tool list)",
                    is_error=True,
                )
            return await call_tool(link, entry.remote, arguments, ctx)

        return Tool(
            name=entry.crab_name,
            description=entry.description,
            parameters=entry.schema,
            handler=handler,
            permission=entry.permission,  # type: ignore[arg-type]
            timeout=link.config.connect_timeout + link.config.timeout + 5.0,
            output_limit=None,  # call_tool cuts the server's text itself, inside its fence
            validate_arguments=False,  # the server checks its own schema and says what is wrong
        )


async def call_tool(
    link: ServerLink, tool: str, arguments: Mapping[str, Any], ctx: ToolContext | None = None
) -> ToolResult:
    """One call as a crab result: the server's answer (masked, then fenced as the server's
    content, ``crab_mcp.fence``), or one line of crab's own saying why there is none."""
    from crab_mcp.fence import fenced
    from crab_mcp.results import cut, to_tool_result

    where = f"MCP server {link.name!r}"
    try:
        result = await link.call(tool, arguments, ctx)
    except ServerDown as exc:
        return ToolResult(f"{where} is not available: {exc}", is_error=True)
    except CallFailed as exc:
        return ToolResult(f"{where} {exc}", is_error=True)
    except RuntimeError as exc:  # the SDK's output-schema check: "Invalid structured content …"
        return ToolResult(f"{where} answered {tool} with an invalid result: {exc}", is_error=True)
    converted: ToolResult = to_tool_result(result)
    # Masked whole, then cut (a secret the cut splits is not left half), then fenced: the fence
    # must close after what the model reads, and crab's note on the cut is crab's, not the server's.
    kept, note = cut(mask(link, converted))
    answer = fenced(link.name, tool, kept)
    if note is None:
        return answer
    return ToolResult(f"{answer.content}\n{note}", answer.is_error, answer.details, images=answer.images)


def _failure(link: ServerLink, task: asyncio.Future[None]) -> str | None:
    """Why a finished start task did not start ``link`` (None: it did)."""
    if task.cancelled():
        return link.reason or "its start was cancelled"
    outcome = task.exception()
    if outcome is None:
        return None
    return str(outcome) if isinstance(outcome, ServerDown) else link.reason or repr(outcome)


def mask(link: ServerLink, result: ToolResult) -> ToolResult:
    """``result`` with the values of the server's ``${VAR}`` references masked (a server that
    echoes its token must not hand it to the model; crab's own redaction covers known keys)."""
    from crab_mcp.settings import secret_values

    secrets = secret_values(link.config, link.environ)
    if not secrets:
        return result
    from crab.secrets import Redactor

    redactor = Redactor(secrets)
    return ToolResult(
        redactor.text(result.content), result.is_error, redactor.payload(dict(result.details)), images=result.images
    )
