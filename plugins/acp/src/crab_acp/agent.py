"""The ACP agent side of ``crab acp``: the methods an editor calls, answered with crab.

``initialize`` states what crab does (load sessions; text, images and embedded context in prompts, no
audio; MCP over stdio, HTTP and SSE when crab-mcp is installed); ``session/new`` and
``session/load`` make an ``AcpSession``; ``session/prompt``, ``session/cancel``,
``session/set_mode`` and ``session/set_config_option`` (the model) act on it. A failure is a
JSON-RPC error for that request only; the connection and the other sessions go on.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import crab
from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from crab_acp import mcp_servers
from crab_acp.bridge import EditorCaps
from crab_acp.permissions import MODE_IDS, mode_state
from crab_acp.session import AcpSession, AgentOptions, settle

log = logging.getLogger("crab_acp")


class CrabAcpAgent:
    """Every session of one editor connection."""

    def __init__(self, *, model: str | None = None, provider: str | None = None, store: str | None = None) -> None:
        self.options = AgentOptions(model, provider, store)
        self.connection: Any = None
        self.caps = EditorCaps()
        self.sessions: dict[str, AcpSession] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    def on_connect(self, conn: Any) -> None:
        self.connection = conn

    # --- connection -----------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        caps = client_capabilities or ClientCapabilities()
        fs = caps.fs
        self.caps = EditorCaps(
            read_text_file=bool(fs and fs.read_text_file),
            write_text_file=bool(fs and fs.write_text_file),
            terminal=bool(caps.terminal),
        )
        who = f"{client_info.name} {client_info.version}" if client_info else "an unnamed client"
        log.info("initialize from %s (protocol %s): %s", who, protocol_version, self.caps)
        mcp = mcp_servers.available()
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=mcp, sse=mcp),
            ),
            agent_info=Implementation(name="crab", title="crab", version=crab.__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        raise RequestError.invalid_params({"details": "crab needs no authentication: keys live in its own config"})

    # --- sessions -------------------------------------------------------------------------------

    def _absolute(self, cwd: str) -> str:
        if not os.path.isabs(cwd) or not os.path.isdir(cwd):
            raise RequestError.invalid_params({"details": f"cwd must be an existing absolute folder, not {cwd!r}"})
        return cwd

    async def _open(self, cwd: str, mcp: list[Any] | None, session_id: str | None) -> tuple[AcpSession, list[Any]]:
        settings, skipped = mcp_servers.server_settings(mcp)
        session = AcpSession(self.connection, self.options, self._absolute(cwd), settings, self.caps)
        try:
            replay = await session.start(session_id)
        except crab.CrabError as exc:
            await session.close()
            raise RequestError.invalid_params({"details": str(exc)}) from None
        except BaseException:
            await session.close()
            raise
        if settings and not any(p.name == "mcp" and p.status == "loaded" for p in session._handle().plugins()):
            skipped.append("crab-mcp is not installed or not enabled: the editor's MCP servers were not started")
        self.sessions[session.id] = session
        session.idle_notes[:0] = skipped
        return session, [*replay, session.commands(), *session.notes()]

    def _after_answer(self, session: AcpSession, updates: list[Any]) -> None:
        """Send ``updates`` once the answer naming the session is out (the client knows its id then)."""
        task = asyncio.get_running_loop().create_task(session.send(updates))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        session, updates = await self._open(cwd, mcp_servers, None)
        self._after_answer(session, updates)
        log.info("session %s in %s (model %s)", session.id, session.cwd, session.model)
        return NewSessionResponse(
            session_id=session.id, modes=mode_state(session.bridge.mode), config_options=session.config_options()
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        if session_id in self.sessions:
            raise RequestError.invalid_request({"details": f"session {session_id} is already open"})
        session, updates = await self._open(cwd, mcp_servers, session_id)
        await session.send(updates)  # ACP: the whole history is streamed before the answer
        log.info("loaded session %s (%d updates)", session_id, len(updates))
        return LoadSessionResponse(modes=mode_state(session.bridge.mode), config_options=session.config_options())

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params(
                {"details": f"no open session {session_id}: call session/new or session/load"}
            )
        return session

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        if mode_id not in MODE_IDS:
            raise RequestError.invalid_params(
                {"details": f"mode must be one of {', '.join(MODE_IDS)}, not {mode_id!r}"}
            )
        self._session(session_id).set_mode(mode_id)
        log.info("session %s now in mode %s", session_id, mode_id)
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        session = self._session(session_id)
        if config_id != "model" or not isinstance(value, str):
            raise RequestError.invalid_params({"details": f"crab has no option {config_id!r}; its option is model"})
        await session.set_model(value)
        return SetSessionConfigOptionResponse(config_options=session.config_options())

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        return await self._session(session_id).prompt(prompt)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            log.info("cancel in session %s", session_id)
            session.cancel()

    async def shutdown(self) -> None:
        """The client is gone: abort every turn, close every agent."""
        for task in list(self._tasks):
            task.cancel()
        await settle(list(self.sessions.values()))
        self.sessions.clear()
