"""crab as a library: ``crab.Agent``, its runs (``crab.Run``) and their results, a thin facade over
the composition root and the loop's agent; sync methods run the same coroutines on the facade's
own event loop, and nothing prints unless the program names a renderer (docs/library.md)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from crab._assembly.asking import AskCallback, QuestionCallback, SessionAsker, as_ask, as_question
from crab._assembly.result import ResultCollector, RunResult
from crab._assembly.root import Layers, PermissionMode, assemble
from crab._contracts.errors import CrabError, UsageError
from crab._contracts.events import Event, NoticeEvent
from crab._contracts.images import ImagePart
from crab._host.hookspecs import hookimpl
from crab._host.plugin_host import OWN_NAMES

if TYPE_CHECKING:
    from types import TracebackType

    from crab._config.layers import Config
    from crab._contracts.providers import Provider
    from crab._contracts.renderers import Renderer
    from crab._contracts.storage import Store
    from crab._contracts.tools import Tool
    from crab._loop.agent import Agent as LoopAgent
    from crab._loop.session import Session, TurnOutcome

Listener = Callable[[Event], None]
T = TypeVar("T")


class Agent:
    """One agent: its config, plugins, tools, store, provider and model, and its sessions.

    Everything is chosen when it is made (a bad setup raises ``crab.ConfigError``,
    ``crab.PluginError`` or ``crab.UsageError`` here, before any run):

    - ``model``: ``"provider/model"`` (``"mock/tour"``, ``"openai/gpt-4.1-mini"``) or a model id of
      ``provider``; None: the config's ``[crab] model``.
    - ``provider``: a ``crab.Provider`` object or a loaded provider's name.
    - ``tools``: plain typed functions (made tools with ``crab.tool``) or ``crab.Tool`` objects.
    - ``plugins``: installed plugins by entry-point name, exactly these (``[]``: none but
      core's built-ins); None: the config's choice, as ``crab run`` makes it.
      ``plugin_objects``: in-process plugin objects (a module or instance with hooks) by name.
    - ``settings``: dotted config keys (``{"crab.max_iterations": 5}``), applied last;
      ``user_config``, ``project_config`` and ``environment`` switch those layers off.
    - ``store``: a ``crab.Store`` or a store's name (None: the config's choice, else memory).
    - ``workspace``: the folder tools work in (default: the current one).
    - ``permissions``: ``"ask"`` (default), ``"yolo"`` or ``"read-only"``; ``ask`` answers the
      gate's questions, sync or async, with ``"once"``, ``"always"`` (this permission class for
      the rest of the session) or ``"deny"``. Without ``ask`` nothing that writes, runs or reaches
      the network is allowed in ``"ask"`` mode.
    - ``question``: answers a tool's ``crab.Question`` (crab-ask's ``ask_user``), sync or async,
      with the user's words (a string: a choice, or other words when ``free_text``) or None for
      no answer. Without it the tool is told at once that nobody can answer.
    - ``renderer``: a renderer's name (``"plain"``, ``"jsonl"``, a plugin's) or a
      ``crab.Renderer`` to show every event on stdout/stderr; ``listeners`` get every event.

    Use it as a context manager (``with`` or ``async with``) or call ``close``/``aclose``. An agent
    runs on one event loop: the first call decides whether that is the caller's (async methods)
    or its own (the ``*_sync`` methods).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        provider: Provider | str | None = None,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        plugins: Sequence[str] | None = None,
        plugin_objects: Mapping[str, object] | None = None,
        settings: Mapping[str, Any] | None = None,
        user_config: bool = True,
        project_config: bool = True,
        environment: bool = True,
        store: Store | str | None = None,
        workspace: str | Path | None = None,
        permissions: PermissionMode | None = None,
        ask: AskCallback | None = None,
        question: QuestionCallback | None = None,
        renderer: str | Renderer | None = None,
        listeners: Sequence[Listener] = (),
    ) -> None:
        if isinstance(plugins, str):
            raise UsageError('plugins= takes a list of names (["mock", "tools-basic"]), not one string')
        for name in plugin_objects or {}:
            if name in OWN_NAMES:
                raise UsageError(f"plugin_objects: {name!r} is the name of one of crab's own plugins; pick another")
        self._routes = RunRoutes()
        try:
            built = assemble(
                workspace=Path(workspace).resolve() if workspace is not None else None,
                layers=Layers(user_config, project_config, environment, settings),
                plugins=plugins,
                objects={**(plugin_objects or {}), ROUTES: self._routes},
                tools=tools,
                store=store,
                provider=provider,
                model=model,
                permissions=permissions,
                question=as_question(question),
                # CRAB_STRICT_PLUGINS=1 decides, as for the CLI, unless the environment layer is off.
                strict=None,
                require_plugins=True,
            )
        except CrabError as exc:
            _masked(exc)
            raise
        self.config: Config = built.config
        self._agent: LoopAgent = built.agent
        self._renderer = _attach_renderer(built, renderer) if renderer is not None else None
        for listener in listeners:
            self._agent.subscribe(listener)
        self._ask = as_ask(ask)
        self._sessions: dict[str, Session] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: asyncio.Runner | None = None
        self._closed = False

    # --- what it is ---------------------------------------------------------------------------

    @property
    def model(self) -> str:
        """``provider/model`` this agent talks to."""
        return f"{self._agent.provider.name}/{self._agent.model}"

    @property
    def workspace(self) -> Path:
        return self._agent.workspace

    @property
    def tool_names(self) -> list[str]:
        """Every tool the model may be offered (known once the agent started: the first run)."""
        return sorted(self._agent.tools) if self._loop is not None else []

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Run the plugins' registration and start-up hooks and open the store (the first run does it)."""
        loop = asyncio.get_running_loop()
        if self._closed:
            raise UsageError("this crab.Agent is closed; make a new one")
        if self._loop is loop:
            return
        if self._loop is not None:
            raise UsageError("this crab.Agent runs on another event loop; make one agent per event loop")
        from crab._assembly.choosing import start_agent

        self._loop = loop
        await start_agent(self._agent)

    async def aclose(self) -> None:
        """Run the plugins' shutdown hooks and close the store (and the renderer, if any)."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._loop is not None:
                for session in list(self._sessions.values()):
                    self._agent.abort(session)
                await self._agent.close()
        finally:
            if self._renderer is not None:
                self._renderer.close()

    def close(self) -> None:
        """``aclose`` for a program using the ``*_sync`` methods."""
        if self._runner is not None:
            try:
                _run(self._runner, self.aclose())
            finally:
                self._runner.close()
                self._runner = None
        elif self._loop is None:
            # Never started: no hook ran and no store opened, so there is nothing to await.
            self._closed = True
            if self._renderer is not None:
                self._renderer.close()
        else:
            raise UsageError("this crab.Agent runs on an event loop: await agent.aclose() there")

    async def __aenter__(self) -> Agent:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # --- runs -----------------------------------------------------------------------------------

    def run_stream(self, prompt: str, *, session: str | None = None, images: Sequence[ImageInput] = ()) -> Run:
        """A run of ``prompt`` (in the session ``session`` names, else a new one): iterate it with
        ``async for`` for its events, ``await run.result()`` for how it ended.

        ``images`` go with the prompt: ``crab.messages.ImagePart``s, raw bytes or paths of PNG, JPEG, GIF
        or WebP files (``UsageError`` for anything else; ``ImageTooLarge`` past the cap).
        """
        return Run(self, prompt, session, image_parts(images))

    async def run(self, prompt: str, *, session: str | None = None, images: Sequence[ImageInput] = ()) -> RunResult:
        """Run ``prompt`` (with ``images``) to the end (in session ``session``, else a new one)."""
        return await self.run_stream(prompt, session=session, images=images).result()

    def run_sync(self, prompt: str, *, session: str | None = None, images: Sequence[ImageInput] = ()) -> RunResult:
        """``run`` for a program without an event loop of its own."""
        return self._sync(self.run(prompt, session=session, images=images))

    def run_stream_sync(self, prompt: str, *, session: str | None = None, images: Sequence[ImageInput] = ()) -> Run:
        """``run_stream`` for a program without an event loop: iterate it with a plain ``for``,
        then read ``run.result_sync()``."""
        self._own_runner()
        return Run(self, prompt, session, image_parts(images))

    def abort(self, session: str) -> bool:
        """Stop the running turn of session ``session``; False when nothing was running there."""
        live = self._sessions.get(session)
        return live is not None and self._agent.abort(live)

    async def session_ids(self, limit: int = 20) -> list[str]:
        """The ids of this workspace's latest sessions in the store, newest first."""
        await self.start()
        return [info.id for info in await self._agent.store.list_sessions(str(self._agent.workspace), limit=limit)]

    # --- internals ------------------------------------------------------------------------------

    def _own_runner(self) -> asyncio.Runner:
        if self._closed:
            raise UsageError("this crab.Agent is closed; make a new one")
        if _loop_running():
            raise UsageError("a *_sync method was called inside a running event loop; await agent.run(...) there")
        if self._runner is None:
            if self._loop is not None:
                raise UsageError("this crab.Agent runs on an event loop: use the async methods there")
            self._runner = asyncio.Runner()
        return self._runner

    def _sync(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            runner = self._own_runner()
        except UsageError:
            coro.close()
            raise
        return _run(runner, coro)

    async def _session(self, session_id: str | None) -> Session:
        await self.start()
        if session_id is None:
            session = await self._agent.new_session()
        elif session_id in self._sessions:
            return self._sessions[session_id]
        else:
            from crab._assembly.choosing import require_session

            info = await require_session(self._agent.store, session_id)
            if info.workspace and Path(info.workspace) != self._agent.workspace:
                # Resuming would run this agent's tools in that folder, under this one's config and trust.
                raise UsageError(
                    f"session {session_id} belongs to another workspace ({info.workspace}), not this agent's "
                    f"({self._agent.workspace}): continue it with crab.Agent(workspace=...) there"
                )
            session = await self._agent.resume(session_id)
        if self._ask is not None:
            session.ask = SessionAsker(self._ask)
        self._sessions[session.id] = session
        return session


ROUTES = "program-runs"
"""The plugin name of an agent's ``RunRoutes`` (beside ``program-tools``)."""


class RunRoutes:
    """Hands each run the events of its session, and every run the agent's notices.

    A ``crab_event`` observer, not a listener: the hook is told which session an event belongs
    to (a listener is not), so a run never sees another session's events.
    """

    def __init__(self) -> None:
        self.runs: dict[str, Run] = {}

    @hookimpl
    def crab_event(self, event: Event, session_id: str) -> None:
        if session_id:
            run = self.runs.get(session_id)
            if run is not None:
                run._take(event)
        elif isinstance(event, NoticeEvent):  # a plugin failure, a config warning: the whole agent's
            for run in list(self.runs.values()):
                run._take(event)


class Run:
    """One input to an agent, its events as they happen, and its ``RunResult`` at the end.

    ``async for event in run`` (or ``for`` from ``run_stream_sync``) yields the typed events a
    renderer gets: ``TurnStarted``, ``TextDelta``, ``ToolCallEvent``, ``ToolResultEvent``,
    ``UsageEvent``, ``NoticeEvent``, ``TurnEnded``… While it runs, ``steer(text)`` hands the model
    more input after the current tool call, ``follow_up(text)`` queues an input for after the
    turn (the run ends when that one has), and ``abort()`` stops it (every open tool call still
    gets its result, so the session stays valid).
    """

    def __init__(self, owner: Agent, prompt: str, session_id: str | None, images: tuple[ImagePart, ...] = ()) -> None:
        self._owner = owner
        self._prompt = prompt
        self._images = images
        self._wanted = session_id
        self._session: Session | None = None
        self._events: asyncio.Queue[Event | None] | None = None
        self._collector = ResultCollector()
        self._tasks: list[asyncio.Task[TurnOutcome]] = []
        self._result: RunResult | None = None
        self._pending: list[tuple[str, bool]] = []

    @property
    def session_id(self) -> str | None:
        """The session this run is in (None until it started)."""
        return self._session.id if self._session is not None else self._wanted

    @property
    def done(self) -> bool:
        """True once the run has ended (its result is ready)."""
        return self._result is not None

    async def _start(self) -> None:
        if self._session is not None:
            return
        session = await self._owner._session(self._wanted)
        routes = self._owner._routes.runs
        if session.id in routes:
            raise UsageError(
                f"session {session.id} has a run in progress: give it more with run.steer(text) or "
                "run.follow_up(text), or wait for its result"
            )
        self._session = session
        self._events = asyncio.Queue()
        routes[session.id] = self
        self._submit(self._prompt, steer=False, images=self._images)
        for text, steer in self._pending:
            self._submit(text, steer=steer)
        self._pending.clear()

    def _take(self, event: Event) -> None:
        self._collector.handle(event)
        if self._events is not None:
            self._events.put_nowait(event)

    def _submit(self, text: str, *, steer: bool, images: tuple[ImagePart, ...] = ()) -> None:
        assert self._session is not None
        agent = self._owner._agent
        task = asyncio.ensure_future(agent.handle_input(self._session, text, steer=steer, images=images))
        self._tasks.append(task)
        task.add_done_callback(self._finished)

    def _finished(self, _task: asyncio.Task[TurnOutcome]) -> None:
        if self._events is not None and all(task.done() for task in self._tasks):
            self._events.put_nowait(None)

    # --- control ------------------------------------------------------------------------------

    def steer(self, text: str) -> None:
        """Give the running turn more input (taken after the current tool call)."""
        self._add(text, steer=True)

    def follow_up(self, text: str) -> None:
        """Queue ``text`` as the next input, for after the current turn."""
        self._add(text, steer=False)

    def _add(self, text: str, *, steer: bool) -> None:
        if self._result is not None or (self._tasks and all(task.done() for task in self._tasks)):
            raise UsageError("this run has ended; start another with agent.run(text, session=result.session_id)")
        if self._session is None:
            self._pending.append((text, steer))
        else:
            self._submit(text, steer=steer)

    def abort(self) -> bool:
        """Stop the running turn; False when nothing was running."""
        return self._session is not None and self._owner._agent.abort(self._session)

    # --- events and the result ------------------------------------------------------------------

    async def _next(self) -> Event | None:
        await self._start()
        assert self._events is not None
        if self._result is not None and self._events.empty():
            return None
        try:
            event = await self._events.get()
        except asyncio.CancelledError:
            await self._stop()
            raise
        if event is None:
            await self._finish()
        return event

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._aiter()

    async def _aiter(self) -> AsyncIterator[Event]:
        while (event := await self._next()) is not None:
            yield event

    def __iter__(self) -> Iterator[Event]:
        runner = self._owner._own_runner()
        while (event := _run(runner, self._next())) is not None:
            yield event

    async def result(self) -> RunResult:
        """Wait for the run to end (events not iterated are dropped) and return its result."""
        while self._result is None:
            await self._next()
        return self._result

    def result_sync(self) -> RunResult:
        """``result`` for a run from ``run_stream_sync``."""
        result: RunResult = _run(self._owner._own_runner(), self.result())
        return result

    async def _stop(self) -> None:
        """The caller was cancelled (Ctrl-C): abort the turn and let it pair its open calls."""
        self.abort()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._leave_routes()

    async def _finish(self) -> None:
        self._leave_routes()
        outcomes = [task.result() for task in self._tasks]  # a failure of the loop itself raises here
        assert self._session is not None
        redact = self._owner._agent.redactor.text
        self._result = self._collector.result(self._session.id, outcomes[0], outcomes, redact)

    def _leave_routes(self) -> None:
        if self._session is not None and self._owner._routes.runs.get(self._session.id) is self:
            del self._owner._routes.runs[self._session.id]


ImageInput = ImagePart | bytes | str | Path
"""What a run takes as an image: a ``crab.messages.ImagePart``, the bytes of one, or a file's path."""


def image_parts(items: Sequence[ImageInput]) -> tuple[ImagePart, ...]:
    """``items`` as image parts (types sniffed from the bytes); a ``UsageError`` naming a bad one."""
    parts: list[ImagePart] = []
    for item in items:
        if isinstance(item, ImagePart):
            parts.append(item)
            continue
        try:
            if isinstance(item, bytes | bytearray | memoryview):
                parts.append(ImagePart.from_bytes(bytes(item)))
            elif isinstance(item, str | Path):
                parts.append(ImagePart.from_path(item))
            else:
                raise ValueError(f"expected an ImagePart, bytes or a path, not {type(item).__name__}")
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot use image {_label(item)}: {exc}") from None
    return tuple(parts)


def _label(item: object) -> str:
    return f"{len(item)} bytes" if isinstance(item, bytes | bytearray | memoryview) else repr(str(item))


def _masked(exc: CrabError) -> None:
    """Mask in ``exc``'s message every secret crab can find masked in its message: a program prints it, or its
    traceback does, and a key passed as the wrong setting would show in clear (the CLI masks the
    line it prints; a program has no such step)."""
    from crab._secrets.redaction import error_line

    text = str(exc)
    masked = error_line(text)
    if masked != text:
        exc.args = (masked,)


def _run(runner: asyncio.Runner, coro: Coroutine[Any, Any, T]) -> T:
    """``runner.run(coro)`` with every signal waking the loop: Ctrl-C then cancels the run at
    once, even when it reached a sync tool's thread or came just as the loop went to sleep
    (``crab._system.signal_wakeup``), never only when the tool returns."""
    from crab._system.signal_wakeup import waking

    with waking(runner.get_loop()):
        return runner.run(coro)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _attach_renderer(built: Any, renderer: str | Renderer) -> Renderer:
    """The named renderer (or the given one) on stdout/stderr, subscribed to every event."""

    agent = built.agent
    if isinstance(renderer, str):
        from crab._assembly.choosing import choose_renderer, terminal_target

        shown: Renderer = choose_renderer(built.host, built.config, renderer, terminal_target(agent))
    else:
        shown = renderer
    agent.subscribe(shown.handle)
    return shown
