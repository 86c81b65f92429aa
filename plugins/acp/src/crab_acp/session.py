"""One editor session: its ``crab.Agent`` (workspace = the editor's folder), mode, model and turn.

Each ACP session gets an agent of its own, because what makes an agent differs per session: the
workspace (its ``.crab/config.toml`` read with crab's trust rules), the MCP servers the editor
passes, and the tools the client can take over. The crab session id is the ACP session id, so
``session/load`` finds it in crab's store (and ``crab chat --session`` there). A prompt is one
``Run``: its events go out as updates in order; ``cancel`` aborts it (every open call still gets
its result) and the prompt answers ``cancelled``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import acp
import crab
from acp import RequestError
from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    PromptResponse,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    ToolCallUpdate,
    UnstructuredCommandInput,
)

from crab_acp.bridge import NAME, Bridge, EditorCaps
from crab_acp.editor_terminal import EditorTerminal
from crab_acp.permissions import answer, choice_options, chosen, options
from crab_acp.prompt import prompt_parts
from crab_acp.updates import Replay, UpdateMapper

log = logging.getLogger("crab_acp")

EDITOR_SKIPS = frozenset({"quit", "abort", "fork", "new", "clear", "resume", "model", "edit"})
"""Router commands an editor has its own control for (closing, the stop button, the model menu),
that would move the conversation to a session the editor does not know of (``/fork``, ``/new``,
``/clear``, ``/resume``) or that need crab's own terminal (``/edit``): not offered there."""

ASK_TOOL = "ask_user"
"""crab-ask's tool: a question is attached to its running call."""
SETTLE_WAIT = 10.0
"""Seconds an aborted turn may take to end (its tools stopped, its calls paired) before its agent closes."""
STOPS = {"aborted": "cancelled", "max_iterations": "max_turn_requests"}


@dataclass(frozen=True)
class AgentOptions:
    """What ``crab acp``'s flags chose for every session (None: crab's config decides)."""

    model: str | None = None
    provider: str | None = None
    store: str | None = None


def build_agent(
    options: AgentOptions,
    cwd: str,
    settings: Mapping[str, Any],
    bridge: Bridge,
    ask: Any,
    question: Any,
    *,
    model: str | None = None,
    permissions: str | None = "ask",
) -> crab.Agent:
    return crab.Agent(
        model or options.model,
        provider=options.provider,
        store=options.store,
        workspace=cwd,
        settings=settings,
        permissions=permissions,  # type: ignore[arg-type]
        ask=ask,
        question=question,
        plugin_objects={NAME: bridge},
        listeners=[lambda event: bridge.seen(event)],
    )


class AcpSession:
    """One session of the editor's; made by ``open``."""

    def __init__(self, connection: Any, options: AgentOptions, cwd: str, settings: Mapping[str, Any], caps: EditorCaps):
        self.connection = connection
        self.options = options
        self.cwd = cwd
        self.settings = dict(settings)
        self.bridge = Bridge(connection, caps, "ask")
        self.agent: crab.Agent | None = None
        self.id = ""
        self.mapper = UpdateMapper(cwd)
        self.bridge.seen = self._seen
        self.idle_notes: list[str] = []
        """Warnings emitted while no turn runs (an MCP server that failed to start): no run hears
        them, so they go to the editor after the session's answer or before the next turn's updates."""
        self.run: crab.Run | None = None
        self.cancelled = False
        self.gone = False
        self.model = ""
        self.idle = asyncio.Event()
        self.idle.set()

    # --- making it --------------------------------------------------------------------------

    async def start(self, session_id: str | None = None) -> list[Any]:
        """Make and start the agent; a new crab session, or the stored ``session_id`` (its
        history returned as updates to replay)."""
        first = self._build(permissions=None)
        configured = str(first.config.get("crab.permissions") or "ask")
        if configured == "ask":
            agent = first
        else:  # the configured mode becomes the session's starting mode; crab's gate stays in ask
            first.close()
            agent = self._build()
        self.bridge.set_mode(configured)
        await self._adopt(agent)
        handle = self._handle()
        if session_id is None:
            view = await handle.new_session()
            self.id = view.id
            return []
        try:
            view = await handle.resume(session_id)
        except crab.StoreError as exc:
            raise RequestError.invalid_params({"details": f"no crab session {session_id}: {exc}"}) from None
        if view.info.workspace and view.info.workspace != str(agent.workspace):
            raise RequestError.invalid_params(
                {"details": f"session {session_id} belongs to {view.info.workspace}, not {agent.workspace}"}
            )
        self.id = view.id
        return Replay(self.mapper).messages(view.messages)

    def _build(self, *, model: str | None = None, permissions: str | None = "ask") -> crab.Agent:
        return build_agent(
            self.options,
            self.cwd,
            self.settings,
            self.bridge,
            self.ask,
            self.question,
            model=model,
            permissions=permissions,
        )

    async def _adopt(self, agent: crab.Agent) -> None:
        try:
            await agent.start()
        except BaseException:
            await agent.aclose()
            raise
        self.agent = agent
        self.model = agent.model
        self.mapper.permissions = {name: tool.permission for name, tool in self._handle().tools.items()}

    def _handle(self) -> crab.AgentHandle:
        if self.bridge.handle is None:
            raise RequestError.internal_error({"details": "crab's agent did not start"})
        return self.bridge.handle

    async def close(self) -> None:
        if self.agent is not None:
            if self.run is not None:
                self.cancel()
            await self.agent.aclose()

    # --- what the editor is told ------------------------------------------------------------

    def commands(self) -> AvailableCommandsUpdate:
        listed = []
        for name, command in sorted(self._handle().commands.items()):
            if name in EDITOR_SKIPS:
                continue
            hint = AvailableCommandInput(root=UnstructuredCommandInput(hint=command.usage)) if command.usage else None
            listed.append(AvailableCommand(name=name, description=command.description, input=hint))
        return AvailableCommandsUpdate(session_update="available_commands_update", available_commands=listed)

    def config_options(self) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
        assert self.agent is not None
        values = [self.model, *(m for m in self._handle().models() if m != self.model)]
        return [
            SessionConfigOptionSelect(
                id="model",
                name="Model",
                category="model",
                type="select",
                current_value=self.model,
                options=[SessionConfigSelectOption(value=value, name=value) for value in values],
            )
        ]

    async def send(self, updates: Sequence[Any]) -> None:
        for update in updates:
            if self.gone:
                return
            try:
                await self.connection.session_update(session_id=self.id, update=update)
            except ConnectionError:
                log.info("the client went away during session %s: aborting its turn", self.id)
                self.gone = True
                self.cancel()

    # --- changing it --------------------------------------------------------------------------

    def set_mode(self, mode: str) -> None:
        self.bridge.set_mode(mode)

    async def set_model(self, model: str) -> None:
        """Switch the session to ``model`` as crab's ``/model`` does (stored, so a resume keeps it)."""
        assert self.agent is not None
        if self.run is not None:
            raise RequestError.invalid_request({"details": "a turn is running: change the model after it ends"})
        result = await self.agent.run(f"/model {model}", session=self.id)
        if not result.ok:
            raise RequestError.invalid_params({"details": result.error or result.text})
        self.model = model if "/" in model else f"{self.model.split('/', 1)[0]}/{model}"

    # --- a turn -------------------------------------------------------------------------------

    async def ask(self, request: crab.PermissionRequest) -> str:
        """The permission gate's question, answered by the mode or by the user in the editor."""
        if self.bridge.mode == "yolo":
            return "once"
        if self.cancelled or self.gone:
            return "deny"
        try:
            response = await self.connection.request_permission(
                session_id=self.id, tool_call=self.mapper.question(request), options=options(request.permission)
            )
        except ConnectionError:
            return "deny"
        return answer(response)

    def _seen(self, event: crab.events.Event) -> None:
        if isinstance(event, crab.events.NoticeEvent) and event.level == "warning" and self.run is None:
            self.idle_notes.append(event.message)

    def notes(self) -> list[Any]:
        """The warnings no turn has shown yet, as one message update (and forget them)."""
        lines, self.idle_notes = self.idle_notes, []
        return [acp.update_agent_message_text("".join(f"[crab] {line}\n" for line in lines))] if lines else []

    async def question(self, question: crab.Question) -> str | None:
        """A tool's question: its choices as the options of a ``session/request_permission``."""
        if not question.choices or self.cancelled or self.gone:
            return None  # free words have no ACP request yet: the tool reports no answer
        asking = next((view for view in reversed(self.mapper.calls.values()) if view.name == ASK_TOOL), None)
        call = ToolCallUpdate(
            tool_call_id=asking.id if asking is not None else "question",
            title=question.text,
            kind="other",
            status="pending",
        )
        try:
            response = await self.connection.request_permission(
                session_id=self.id, tool_call=call, options=choice_options(question.choices)
            )
        except ConnectionError:
            return None
        return chosen(response, question.choices)

    async def prompt(self, blocks: Sequence[Any]) -> PromptResponse:
        assert self.agent is not None
        if self.run is not None:
            raise RequestError.invalid_request({"details": "this session is already answering a prompt"})
        self.cancelled = False
        text, images = prompt_parts(blocks)
        try:
            run = self.agent.run_stream(text, session=self.id, images=images)
        except crab.CrabError as exc:  # an image past [crab] max_image_bytes: one line, nothing recorded
            raise RequestError.invalid_params({"details": str(exc)}) from None
        self.run = run
        self.idle.clear()
        await self.send(self.notes())
        try:
            async for event in run:
                if isinstance(event, EditorTerminal):
                    await self.send([self.mapper.terminal(event.call_id, event.terminal_id)])
                else:
                    await self.send(self.mapper.updates(event))
            result = await run.result()
        finally:
            self.run = None
            self.idle.set()
        if self.cancelled or result.stop == "aborted":
            return PromptResponse(stop_reason="cancelled")
        if result.stop == "error" and result.error:
            await self.send([acp.update_agent_message_text(f"\n[crab] the turn failed: {result.error}\n")])
        return PromptResponse(stop_reason=STOPS.get(result.stop, "end_turn"))  # type: ignore[arg-type]

    def cancel(self) -> None:
        self.cancelled = True
        if self.run is not None:
            self.run.abort()


async def settle(sessions: Sequence[AcpSession]) -> None:
    """Abort every running turn, let each pair its open calls, then close every agent (the client is gone)."""
    for session in sessions:
        session.gone = True
        session.cancel()
    waits = [asyncio.wait_for(session.idle.wait(), SETTLE_WAIT) for session in sessions]
    await asyncio.gather(*waits, return_exceptions=True)
    await asyncio.gather(*(session.close() for session in sessions), return_exceptions=True)
