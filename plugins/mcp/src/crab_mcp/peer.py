"""What one server tells crab and asks of it, outside ``tools/call``: the client callbacks.

``Peer`` is handed to ``mcp.Client`` for one link (``crab_mcp.server``):

- ``message``: ``notifications/{tools,resources,prompts}/list_changed`` start a relist of that
  list (in a task: the SDK's dispatcher must not wait on a request of the same session), after
  which the link's ``on_change`` listeners run (the manager adds new tools to the registry);
  ``notifications/resources/updated`` goes to the link's ``on_update`` listeners
  (``crab_mcp.subscriptions``).
- ``log``: ``notifications/message`` becomes a line of the server's log (masked, cut, counted
  against the same cap as its stderr: ``crab_mcp.logpump``).
- ``roots``: the workspace of the running call (else the agent's) and the extra roots of the
  user's own config, as ``file://`` URIs.
- ``sampling``: crab's model answers only after the user approved it through the permission
  question of the running call of this server, as ``[plugins.mcp] sampling`` allows
  (``crab_mcp.sampling``); otherwise refused with a line saying why.
- ``elicitation``: asked through the permission question of the tool call that is running on
  this server (nobody else can answer, and a question that arrives while no call of this server
  runs, or on a remote channel, is refused). URL mode shows the URL and never opens it; a form
  with fields is refused (crab's question answers yes or no only); a form without fields is a
  confirmation.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crab import ToolContext

    from crab_mcp.logpump import LogSink
    from crab_mcp.sampling import SamplingPolicy

SAMPLING_REFUSED = "crab refused the sampling request"
MAX_LOG_DATA = 2000
"""Characters of one logging notification's data kept (the line is cut further by the sink)."""


class Peer:
    """The callbacks of one link (see the module docstring)."""

    def __init__(self, name: str, relist: Callable[[str], Any], updated: Callable[[str], None] | None = None) -> None:
        self.name = name
        self._relist = relist
        self._updated = updated
        self.sink: LogSink | None = None
        self.roots: list[Path] = []
        """Folders announced as roots: the workspace first, then the configured extra roots."""
        self.calls: list[ToolContext] = []
        """The contexts of this server's tool calls in flight (the newest last): who can be asked."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self.sampling_policy: SamplingPolicy | None = None
        """What the user's config allows for sampling, and the model call (set by ``crab_startup``)."""

    # --- notifications --------------------------------------------------------------------

    async def message(self, message: Any) -> None:
        from mcp import types

        kinds: dict[type, str] = {
            types.ToolListChangedNotification: "tools",
            types.ResourceListChangedNotification: "resources",
            types.PromptListChangedNotification: "prompts",
        }
        if isinstance(message, types.ResourceUpdatedNotification):
            if self._updated is not None:
                self._updated(str(message.params.uri))
            return
        kind = kinds.get(type(message))
        if kind is None:
            return
        task = asyncio.create_task(self._relist(kind), name=f"crab-mcp-{self.name}-relist-{kind}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def log(self, params: Any) -> None:
        if self.sink is None:
            return
        data = params.data if isinstance(params.data, str) else json.dumps(params.data, default=str)
        where = f" {params.logger}" if params.logger else ""
        self.sink.line(data[:MAX_LOG_DATA], prefix=f"[server log {params.level}{where}] ")

    def cancel(self) -> None:
        """End relists still running (the connection is closing)."""
        for task in list(self._tasks):
            task.cancel()

    # --- requests from the server ---------------------------------------------------------

    async def list_roots(self, context: Any) -> Any:
        from mcp import types

        roots = [types.Root.model_validate({"uri": p.as_uri(), "name": p.name or str(p)}) for p in self.roots]
        return types.ListRootsResult(roots=roots)

    def set_roots(self, workspace: Path, extra: Sequence[Path]) -> bool:
        """Announce ``workspace`` and ``extra``; True when that changed what was announced."""
        roots = list(dict.fromkeys([workspace.resolve(), *(p.resolve() for p in extra)]))
        if roots == self.roots:
            return False
        self.roots = roots
        return True

    async def sampling(self, context: Any, params: Any) -> Any:
        from mcp import types

        from crab_mcp.sampling import Refused, SamplingPolicy, answer

        try:
            note, result = await answer(self.name, self.calls, self.sampling_policy or SamplingPolicy(), params)
        except Refused as exc:
            self._note(f"refused a sampling request ({len(params.messages)} message(s)): {exc}")
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"{SAMPLING_REFUSED}: {exc}")
        self._note(note)
        return result

    async def elicitation(self, context: Any, params: Any) -> Any:
        from crab import PermissionRequest
        from mcp import types

        def refuse(why: str) -> Any:
            self._note(f"refused an elicitation: {why}")
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"crab refused the elicitation: {why}")

        ctx = self.calls[-1] if self.calls else None
        if ctx is None:
            return refuse("no tool call of this server is running, so nobody can be asked")
        if ctx.ask is None or not ctx.local:
            return refuse("nobody can answer here (a remote channel, or no one at the keyboard)")
        mode = getattr(params, "mode", "form")
        if mode == "url":
            summary = (
                f"MCP server {self.name!r} asks you to open {params.url} in your browser: "
                f"{params.message.strip()} (crab does not open it; answer yes once you have, or deny)"
            )
        else:
            fields = (params.requested_schema or {}).get("properties") or {}
            if fields:
                names = ", ".join(sorted(fields))
                return refuse(f"it asks for a form ({names}) and crab can only ask yes or no")
            summary = f"MCP server {self.name!r} asks you to confirm: {params.message.strip()}"
        answer = await ctx.ask(PermissionRequest(f"{self.name} (MCP elicitation)", "network", summary))
        self._note(f"elicitation ({mode}) answered {answer}")
        if answer in ("once", "always"):
            return types.ElicitResult(action="accept", content=None if mode == "url" else {})
        return types.ElicitResult(action="decline")

    def _note(self, text: str) -> None:
        if self.sink is not None:
            self.sink.line(text, prefix="[crab] ")
