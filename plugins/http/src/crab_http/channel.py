"""The ``http`` channel: the ASGI app (``crab_http.app``) on uvicorn, inside ``crab serve``.

``HttpChannel`` owns what outlives one request: the token hashes (re-read when the file
changes, so a revoke takes effect at once), the live conversations, and the turns they run.
``start_turn`` runs one turn in a task of the channel's own, so a client that leaves does not
cancel it: ``on_disconnect`` decides whether it is aborted or finishes into the session.
``ask`` puts a permission question, and ``ask_question`` a tool's question (``ctx.question``:
crab-plan's approval), on the stream of the client whose message started the turn and waits for
its answer (``answer``, ``answer_question``); nobody else can see or answer it.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, Literal

import crab

from crab_http.conversations import Conversation, Index, address_of, owner_of
from crab_http.settings import NAME, HttpSettings
from crab_http.tokens import TokenStore, identify

if TYPE_CHECKING:
    import uvicorn

ANSWERS = ("once", "always", "deny")
STOPPING = "http: the server is stopping; try again when it is back"
"""Why a new session or message is refused (503) while ``crab serve`` drains."""
HEARTBEAT = 15.0
"""Seconds between SSE comments on a quiet stream (so proxies and the client notice a dead link)."""
SETTLE_SECONDS = 5.0
"""At shutdown, how long aborted turns get to end before they are cancelled."""
CLOSE_SECONDS = 10.0
"""At shutdown, how long uvicorn gets to finish its connections (its own limit is 5 s) before it is stopped."""


class Busy(crab.CrabError):
    """The session is already running a turn."""


class HttpChannel:
    """``crab serve http``: see the module docstring."""

    local = False

    def __init__(self, config: crab.Config) -> None:
        self.name = NAME
        self.config = config
        self.settings = HttpSettings.from_table(config.plugin_settings(NAME))
        self.tokens = TokenStore()
        self.index = Index()
        self.handle: crab.AgentHandle | None = None
        self.conversations: dict[str, Conversation] = {}
        """By address."""
        self.by_session: dict[str, Conversation] = {}
        self.turns: set[asyncio.Task[Any]] = set()
        self.stopping = False
        self.port: int | None = None
        self._stopped = asyncio.Event()
        self._server: uvicorn.Server | None = None
        self._hashes: dict[str, str] = {}
        self._hashes_stamp: tuple[int, int] | None = None
        self._tokens_broken = False  # the warning is given once per breakage, not per write
        self._open_locks: dict[str, asyncio.Lock] = {}
        self._index_lock = asyncio.Lock()
        self.redactor = crab.secrets.Redactor(crab.secrets.known_secrets(config))

    # --- setup ------------------------------------------------------------------------------

    def check(self) -> None:
        """Refuse to start (one line) without a token or with a listener that is not safe."""
        problem = self.settings.problem()
        if problem:
            raise crab.ConfigError(problem)
        if not self.tokens.hashes():
            raise crab.ConfigError(
                "http: no API token: create one with `crab http token create NAME` (it is shown once), then start again"
            )

    def who(self, token: str) -> str | None:
        """The name of a presented bearer token, or None (the file is re-read when it changes)."""
        try:
            info = self.tokens.path.stat()
            stamp: tuple[int, int] | None = (info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp != self._hashes_stamp:
            try:
                self._hashes = self.tokens.hashes() if stamp is not None else {}
                self._tokens_broken = False
            except crab.CrabError as exc:  # a file broken by hand: refuse everyone until it is fixed
                # An editor writing in steps (truncate, then write) is one breakage, one warning.
                if self.handle is not None and not self._tokens_broken:
                    self._agent().notice(f"{exc}; every request is refused until it is fixed", "warning")
                self._tokens_broken = True
                self._hashes = {}
            self._hashes_stamp = stamp
        return identify(token, self._hashes)

    # --- running ----------------------------------------------------------------------------

    async def run(self, agent: crab.AgentHandle) -> None:
        import uvicorn

        from crab_http.app import build_app

        self.check()
        self.handle = agent
        self.stopping = False
        self._stopped = asyncio.Event()
        settings = self.settings
        sock = _listen(settings.host, settings.port)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            build_app(self),
            log_config=None,
            access_log=False,
            log_level="warning",
            ssl_certfile=settings.tls_cert,
            ssl_keyfile=settings.tls_key,
            proxy_headers=settings.behind_proxy,
            forwarded_allow_ips="127.0.0.1" if settings.behind_proxy else None,
            timeout_graceful_shutdown=5,
            lifespan="off",
            server_header=False,
        )
        self._server = server = _quiet_server(config)
        scheme = "https" if settings.tls_cert else "http"
        host = f"[{settings.host}]" if ":" in settings.host else settings.host
        serving = asyncio.create_task(server.serve(sockets=[sock]), name="crab-http-server")
        try:
            while not server.started and not serving.done():  # noqa: ASYNC110 (uvicorn has no event for it)
                await asyncio.sleep(0.01)
            if serving.done():
                serving.result()
            agent.notice(f"http: listening on {scheme}://{host}:{self.port}/")
            stop = asyncio.create_task(self._stopped.wait())
            await asyncio.wait({serving, stop}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            if serving.done():
                serving.result()  # the server failed: the supervisor says so and restarts it
            if self.turns:
                await asyncio.gather(*list(self.turns), return_exceptions=True)
        finally:
            # Also when crab serve cancels this task because grace_seconds are over: the turns
            # still running are aborted (not cancelled), so each stream ends with its turn_end,
            # and then uvicorn closes its connections itself. A response task cancelled instead
            # is uvicorn's "Exception in ASGI application" and a CancelledError traceback.
            await self._end_turns()
            await _close(server, serving)
            for conversation in self.conversations.values():
                conversation.deny_open_questions()
            sock.close()
            self._server = None

    async def _end_turns(self) -> None:
        """Abort the turns still running and wait for them to end (a turn that does not end
        within ``SETTLE_SECONDS`` is cancelled)."""
        if self.handle is not None:
            for conversation in list(self.conversations.values()):
                if conversation.busy:
                    self.handle.abort(conversation.session)
        running = list(self.turns)
        if not running:
            return
        _, stuck = await asyncio.wait(running, timeout=SETTLE_SECONDS)
        for task in stuck:
            task.cancel()
        if stuck:
            await asyncio.gather(*stuck, return_exceptions=True)

    async def stop(self) -> None:
        """Take no more messages; running turns finish, then the server closes (``crab serve`` drain)."""
        self.stopping = True
        self._stopped.set()

    # --- conversations ----------------------------------------------------------------------

    def _agent(self) -> crab.AgentHandle:
        if self.handle is None:
            raise crab.ChannelError("http is not running")
        return self.handle

    async def open(self, owner: str, key: str | None = None, *, kind: str = "api", title: str = "") -> Conversation:
        """The conversation ``owner/key`` (a new key: a new session), opened once per process."""
        agent = self._agent()
        address = address_of(owner, kind, key)
        found = self.conversations.get(address)
        if found is not None:
            return found
        lock = self._open_locks.setdefault(address, asyncio.Lock())
        async with lock:
            found = self.conversations.get(address)
            if found is None:
                session = await agent.session_for(NAME, address)
                found = Conversation(
                    address, owner, session, kind=kind, title=title, one_off=key is None and kind == "openai"
                )
                self.conversations[address] = self.by_session[session.id] = found
                if kind == "api":
                    # the index is written (and synced) off the event loop, one write at a time
                    async with self._index_lock:
                        await asyncio.to_thread(
                            self.index.add, str(agent.workspace), owner, session.id, address, title or ""
                        )
        self._open_locks.pop(address, None)
        return found

    async def find(self, owner: str, session_id: str) -> Conversation | None:
        """``owner``'s conversation with session ``session_id``; None for anyone else's."""
        found = self.by_session.get(session_id)
        if found is None:
            entry = self.index.find(str(self._agent().workspace), owner, session_id)
            if entry is None or owner_of(str(entry["address"])) != owner:
                return None
            session = await self._agent().session_for(NAME, str(entry["address"]))
            if session.id != session_id:
                return None
            found = self.by_session.get(session_id) or Conversation(
                str(entry["address"]), owner, session, title=str(entry.get("title") or "")
            )
            self.conversations[found.address] = self.by_session[session_id] = found
        return found if found.owner == owner else None

    async def dismiss(self, conversation: Conversation) -> None:
        """A conversation opened for a request that then ran no turn: a one-off is forgotten
        (nobody can address it again), a keyed or API one stays for its next request."""
        if conversation.one_off and not conversation.busy:
            await self._forget(conversation)

    async def _forget(self, conversation: Conversation) -> None:
        """Drop a one-off conversation once its turn is over: nobody can address it again, so
        crab keeps its session no longer and ends what runs for it (its background jobs); the
        session stays in the store."""
        self.conversations.pop(conversation.address, None)
        self.by_session.pop(conversation.session.id, None)
        await self._agent().end_session(conversation.session)

    def listed(self, owner: str) -> list[dict[str, Any]]:
        entries = self.index.list(str(self._agent().workspace), owner)
        return [
            {**{k: e.get(k) for k in ("id", "title", "created")}, "busy": self._busy(e["id"])}
            for e in reversed(entries)
        ]

    def _busy(self, session_id: str) -> bool:
        found = self.by_session.get(session_id)
        return bool(found and found.busy)

    # --- turns ------------------------------------------------------------------------------

    def clean_input(self, text: str, token: str) -> str:
        """The text as the model and the store may see it: known secrets and the caller's token masked."""
        return crab.secrets.Redactor([token, *crab.secrets.known_secrets(self.config)]).text(text.strip())

    def start_turn(self, conversation: Conversation, text: str) -> asyncio.Queue[dict[str, Any] | None]:
        """Run one turn of ``conversation`` in the channel's own task; its events (``event_to_dict``
        JSON, and this channel's ``permission_request``) arrive on the returned queue, then None."""
        if self.stopping:
            raise crab.ChannelError(STOPPING)
        if conversation.busy:
            raise Busy("this session is running a turn: wait for it to end, or abort it")
        agent = self._agent()
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        conversation.busy = True
        conversation.client = queue

        def listen(event: crab.events.Event) -> None:
            if conversation.client is not None:
                conversation.client.put_nowait(crab.events.event_to_dict(event))

        unsubscribe = agent.subscribe(listen, session=conversation.session)
        timer = asyncio.get_running_loop().call_later(self.settings.turn_timeout, agent.abort, conversation.session)

        async def turn() -> None:
            try:
                outcome = await agent.handle_input(conversation.session, text)
                if outcome.switch_session:
                    await self._switch(conversation, outcome.switch_session, queue)
            except Exception as exc:
                agent.notice(
                    f"http: a turn in session {conversation.session.id} failed: {type(exc).__name__}: {exc}", "warning"
                )
                queue.put_nowait(
                    {"v": 1, "type": "error", "message": f"{type(exc).__name__}: {exc}", "kind": "unknown"}
                )
            finally:
                timer.cancel()
                unsubscribe()
                conversation.busy = False
                conversation.deny_open_questions()
                conversation.client = None
                queue.put_nowait(None)
                if conversation.one_off:
                    await self._forget(conversation)

        task = asyncio.create_task(turn(), name=f"crab-http-{conversation.session.id}")
        self.turns.add(task)
        task.add_done_callback(self.turns.discard)
        return queue

    async def _switch(self, conversation: Conversation, session_id: str, queue: asyncio.Queue[Any]) -> None:
        """The conversation moves to ``session_id`` (``/fork``): keyed to it from now on, listed,
        and the client is told with a ``session_switch`` event."""
        agent = self._agent()
        session = await agent.session_for(NAME, conversation.address, session_id=session_id)
        self.by_session.pop(conversation.session.id, None)
        conversation.session = session
        self.by_session[session.id] = conversation
        if conversation.kind == "api":
            title = f"{conversation.title or 'session'} (fork)"
            conversation.title = title
            async with self._index_lock:
                await asyncio.to_thread(
                    self.index.add, str(agent.workspace), conversation.owner, session.id, conversation.address, title
                )
        queue.put_nowait({"v": 1, "type": "session_switch", "session_id": session.id})

    def left(self, conversation: Conversation, queue: asyncio.Queue[Any]) -> None:
        """The client streaming ``conversation``'s turn went away before it ended."""
        if conversation.client is not queue:
            return
        conversation.client = None
        conversation.deny_open_questions()
        if conversation.busy and self.settings.on_disconnect == "abort":
            self._agent().abort(conversation.session)

    async def stream(
        self, conversation: Conversation, queue: asyncio.Queue[dict[str, Any] | None]
    ) -> AsyncIterator[dict[str, Any] | None]:
        """The turn's events until it ends; None now and then while it is quiet (a heartbeat).
        Leaving early (the client disconnected) is ``left``."""
        ended = False
        try:
            while True:
                try:
                    item = await asyncio.wait_for(queue.get(), HEARTBEAT)
                except TimeoutError:
                    yield None
                    continue
                if item is None:
                    ended = True
                    return
                yield item
        finally:
            if not ended:
                self.left(conversation, queue)

    def abort(self, conversation: Conversation) -> bool:
        return self._agent().abort(conversation.session)

    # --- permission questions ---------------------------------------------------------------

    async def ask(self, address: str, request: crab.PermissionRequest) -> Literal["once", "always", "deny"]:
        """Ask the client streaming this conversation's turn. An OpenAI-API conversation (which
        cannot answer) or questions turned off: a refusal. No client, no answer within
        ``ask_timeout``, or the client gone meanwhile: ``TimeoutError``, so the model is told nobody
        answered rather than that the user said no (the stream's ``permission_answer`` says deny)."""
        conversation = self.conversations.get(address)
        if conversation is None or conversation.kind != "api" or self.settings.permission_prompts != "ask":
            return "deny"
        client = conversation.client
        if client is None:
            raise TimeoutError("no client streams this conversation's turn")
        request_id = secrets.token_hex(8)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        conversation.asks[request_id] = future
        client.put_nowait(
            {
                "v": 1,
                "type": "permission_request",
                "id": request_id,
                "tool": request.tool,
                "permission": request.permission,
                "summary": request.summary,
                "timeout": self.settings.ask_timeout,
            }
        )
        try:
            answer = await asyncio.wait_for(future, self.settings.ask_timeout)
        except TimeoutError:
            answer = ""
        finally:
            conversation.asks.pop(request_id, None)
        if conversation.client is client:
            client.put_nowait({"v": 1, "type": "permission_answer", "id": request_id, "answer": answer or "deny"})
        if not answer:  # the wait ran out, or the client left (``deny_open_questions``)
            raise TimeoutError("nobody answered the permission question")
        return "once" if answer == "once" else "always" if answer == "always" else "deny"

    def answer(self, conversation: Conversation, request_id: str, answer: str) -> bool:
        future = conversation.asks.get(request_id)
        if future is None or future.done():
            return False
        future.set_result(answer)
        return True

    # --- tool questions ---------------------------------------------------------------------

    async def ask_question(self, address: str, question: crab.Question) -> str | None:
        """Put a tool's question to the client streaming this conversation's turn, as
        ``ask``: no answer within ``ask_timeout``, no client, ``permission_prompts = "refuse"``
        or an OpenAI-API conversation is no answer (None), which the tool reports."""
        conversation = self.conversations.get(address)
        if conversation is None or conversation.kind != "api" or self.settings.permission_prompts != "ask":
            return None
        client = conversation.client
        if client is None:
            return None
        request_id = secrets.token_hex(8)
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        conversation.questions[request_id] = (question, future)
        client.put_nowait(
            {
                "v": 1,
                "type": "question",
                "id": request_id,
                "text": question.text,
                "choices": list(question.choices),
                "free_text": question.free_text,
                "timeout": self.settings.ask_timeout,
            }
        )
        try:
            answer = await asyncio.wait_for(future, self.settings.ask_timeout)
        except TimeoutError:
            answer = None
        finally:
            conversation.questions.pop(request_id, None)
        if conversation.client is client:
            client.put_nowait({"v": 1, "type": "question_answer", "id": request_id, "answer": answer})
        return answer

    def answer_question(self, conversation: Conversation, request_id: str, typed: str) -> str | bool | None:
        """Answer the open tool question ``request_id`` with ``typed``: the answer taken, False
        when no such question is open, None when ``typed`` is no answer to it (it stays open)."""
        found = conversation.questions.get(request_id)
        if found is None or found[1].done():
            return False
        question, future = found
        answer = question.answer_for(typed)
        if answer is None:
            return None
        future.set_result(answer)
        return answer


async def _close(server: uvicorn.Server, serving: asyncio.Task[None]) -> None:
    """Shut the server down the graceful way (connections finish what they send), forced only
    when that takes longer than ``CLOSE_SECONDS``."""
    if serving.done():
        return
    server.should_exit = True
    try:
        await asyncio.wait_for(asyncio.shield(serving), CLOSE_SECONDS)
    except TimeoutError:
        pass
    finally:  # too slow, or crab serve stopping at once (a second signal)
        if not serving.done():
            server.force_exit = True
            serving.cancel()
            with contextlib.suppress(BaseException):
                await serving


def _quiet_server(config: uvicorn.Config) -> uvicorn.Server:
    """uvicorn's server without its signal handlers: ``crab serve`` owns SIGTERM and SIGINT.
    (Made here so that uvicorn is imported only when the channel runs.)"""
    import uvicorn

    class Quiet(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Quiet(config)


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
    # without it each small response write waits ~40 ms for the client's delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise crab.ConfigError(
            f"http: cannot listen on {host}:{port}: {exc.strerror or exc}; pick another [plugins.http] port"
        ) from None
    sock.listen(512)
    sock.setblocking(False)
    return sock
