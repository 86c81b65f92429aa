"""crab as a library: ``crab.Agent``, its runs (``crab.Run``) and their results, a thin facade over
the composition root and the loop's agent; sync methods run the same coroutines on the facade's
own event loop, and nothing prints unless the program names a renderer (docs/library.md)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar, overload

from crab._assembly.asking import AskCallback, QuestionCallback, SessionAsker, as_ask, as_question
from crab._assembly.history import HistoryItem, checked, history_items
from crab._assembly.limits import LimitWatch, UsageLimitExceeded, UsageLimits
from crab._assembly.output import RETRY, Invalid, OutputError, OutputSpec, output_spec, prompted
from crab._assembly.result import OutputT, ResultCollector, RunResult
from crab._assembly.root import Layers, PermissionMode, assemble
from crab._assembly.thinking import ThinkingLevel, checked_level
from crab._contracts.errors import CrabError, UsageError
from crab._contracts.events import Event, NoticeEvent, TextDelta, ToolCallEvent, TurnStarted
from crab._contracts.images import ImagePart
from crab._contracts.interception import Deny
from crab._contracts.messages import Message, ToolResultMessage
from crab._contracts.run_context import RUN_STATE, RunState
from crab._host.hookspecs import hookimpl
from crab._host.plugin_host import OWN_NAMES

if TYPE_CHECKING:
    from types import TracebackType

    from typing_extensions import Unpack

    from crab._contracts.config import Config
    from crab._contracts.providers import ModelRequest, Provider
    from crab._contracts.renderers import Renderer
    from crab._contracts.storage import Store
    from crab._contracts.tools import Tool, ToolContext
    from crab._loop.agent import Agent as LoopAgent
    from crab._loop.session import Session, TurnOutcome
    from crab._loop.turn_steps import TurnSteps

Listener = Callable[[Event], None]
T = TypeVar("T")
U = TypeVar("U")


class RunOptions(TypedDict, total=False):
    """The keyword arguments every run method takes besides ``output_type`` (see ``Agent.run_stream``)."""

    session: str | None
    images: Sequence[ImageInput]
    deps: Any
    message_history: Sequence[Message] | None
    usage_limits: UsageLimits | None
    output_retries: int | None
    thinking: ThinkingLevel | None


@dataclass(frozen=True, slots=True)
class RunSpec:
    """What one run asks beyond its prompt: the answer's type, retries, deps, a history to start
    from and limits."""

    output: OutputSpec | None = None
    output_retries: int = 1
    deps: Any = None
    history: tuple[Message, ...] | None = None
    limits: UsageLimits | None = None
    thinking: str | None = None


class Agent(Generic[OutputT]):
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
    - ``permissions``: ``"ask"`` (default), ``"yolo"``, ``"read-only"`` or ``"plan"`` (read-only
      until a plan is approved through ``question``, with crab-plan; then ``ask``); ``ask`` answers the
      gate's questions, sync or async, with ``"once"``, ``"always"`` (this permission class for
      the rest of the session) or ``"deny"``. Without ``ask`` nothing that writes, runs or reaches
      the network is allowed in ``"ask"`` mode.
    - ``question``: answers a tool's ``crab.Question`` (crab-ask's ``ask_user``), sync or async,
      with the user's words (a string: a choice, or other words when ``free_text``) or None for
      no answer. Without it the tool is told at once that nobody can answer.
    - ``renderer``: a renderer's name (``"plain"``, ``"jsonl"``, a plugin's) or a
      ``crab.Renderer`` to show every event on stdout/stderr; ``listeners`` get every event.
    - ``output_type``: what every run's ``result.output`` is (a dataclass, TypedDict, pydantic
      model, ``list``/union of those, or a JSON schema dict; a run's own ``output_type`` wins);
      ``output_retries``: how often an answer that does not validate goes back to the model with
      the reason before the run raises ``crab.OutputError``. ``usage_limits``: every run's
      ``crab.messages.UsageLimits`` (a run's own win).
    - ``thinking``: ``"off"``, ``"low"``, ``"medium"`` or ``"high"`` for every run (``[crab] thinking``).
    - ``models``: several ``"provider/model"``s instead of ``model``: the first answers, and a
      request it fails in a way retries cannot cure (auth, overloaded, a server error, a context
      too long for it) goes to the next (``crab._assembly.fallback``).

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
        output_type: type[OutputT] | Mapping[str, Any] | None = None,
        output_retries: int | None = None,
        usage_limits: UsageLimits | None = None,
        models: Sequence[str] | None = None,
        thinking: ThinkingLevel | None = None,
    ) -> None:
        if isinstance(plugins, str):
            raise UsageError('plugins= takes a list of names (["mock", "tools-basic"]), not one string')
        for name in plugin_objects or {}:
            if name in OWN_NAMES:
                raise UsageError(f"plugin_objects: {name!r} is the name of one of crab's own plugins; pick another")
        if models is not None and (model is not None or isinstance(models, str)):
            raise UsageError('models= takes a list of "provider/model"s, tried in order, instead of model=')
        if thinking is not None:  # the program's word, as [crab] thinking (settings are applied last)
            settings = {**(settings or {}), "crab.thinking": checked_level(thinking)}
        self._output = output_spec(output_type) if output_type is not None else None
        self._output_retries = _retries(output_retries) if output_retries is not None else None
        self._limits = usage_limits
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
                model=list(models) if models is not None else model,
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
        if self._output_retries is None:
            self._output_retries = _retries(self.config.get("crab.output_retries", 1))
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

    async def __aenter__(self) -> Agent[OutputT]:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __enter__(self) -> Agent[OutputT]:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # --- runs -----------------------------------------------------------------------------------

    @overload
    def run_stream(self, prompt: str, *, output_type: None = None, **options: Unpack[RunOptions]) -> Run[OutputT]: ...
    @overload
    def run_stream(self, prompt: str, *, output_type: type[U], **options: Unpack[RunOptions]) -> Run[U]: ...
    @overload
    def run_stream(self, prompt: str, *, output_type: Mapping[str, Any], **options: Unpack[RunOptions]) -> Run[Any]: ...

    def run_stream(
        self,
        prompt: str,
        *,
        session: str | None = None,
        images: Sequence[ImageInput] = (),
        output_type: Any = None,
        deps: Any = None,
        message_history: Sequence[Message] | None = None,
        usage_limits: UsageLimits | None = None,
        output_retries: int | None = None,
        thinking: ThinkingLevel | None = None,
    ) -> Run[Any]:
        """A run of ``prompt`` (in the session ``session`` names, else a new one): iterate it with
        ``async for`` for its events, ``await run.result()`` for how it ended.

        ``images`` go with the prompt: ``crab.messages.ImagePart``s, raw bytes or paths of PNG, JPEG, GIF
        or WebP files (``UsageError`` for anything else; ``ImageTooLarge`` past the cap).
        ``output_type`` makes ``result.output`` that type (the agent's by default); ``deps`` is
        what tools taking a ``crab.RunContext`` get as ``ctx.deps``; ``message_history`` starts
        the run's new session from those messages; ``usage_limits`` ends the run with
        ``crab.messages.UsageLimitExceeded`` when it crosses one; ``thinking`` (``"off"``, ``"low"``,
        ``"medium"``, ``"high"``) sets how hard the model thinks for this run's requests.
        """
        spec = self._spec(output_type, deps, message_history, usage_limits, output_retries, session)
        if thinking is not None:
            spec = replace(spec, thinking=checked_level(thinking))
        return Run(self, prompt, session, image_parts(images), spec)

    @overload
    async def run(
        self, prompt: str, *, output_type: None = None, **options: Unpack[RunOptions]
    ) -> RunResult[OutputT]: ...
    @overload
    async def run(self, prompt: str, *, output_type: type[U], **options: Unpack[RunOptions]) -> RunResult[U]: ...
    @overload
    async def run(
        self, prompt: str, *, output_type: Mapping[str, Any], **options: Unpack[RunOptions]
    ) -> RunResult[Any]: ...

    async def run(self, prompt: str, *, output_type: Any = None, **options: Any) -> RunResult[Any]:
        """Run ``prompt`` to the end (``run_stream``'s arguments) and return its ``RunResult``."""
        result: RunResult[Any] = await self.run_stream(prompt, output_type=output_type, **options).result()
        return result

    @overload
    def run_sync(
        self, prompt: str, *, output_type: None = None, **options: Unpack[RunOptions]
    ) -> RunResult[OutputT]: ...
    @overload
    def run_sync(self, prompt: str, *, output_type: type[U], **options: Unpack[RunOptions]) -> RunResult[U]: ...
    @overload
    def run_sync(
        self, prompt: str, *, output_type: Mapping[str, Any], **options: Unpack[RunOptions]
    ) -> RunResult[Any]: ...

    def run_sync(self, prompt: str, *, output_type: Any = None, **options: Any) -> RunResult[Any]:
        """``run`` for a program without an event loop of its own."""
        return self._sync(self.run(prompt, output_type=output_type, **options))

    @overload
    def run_stream_sync(
        self, prompt: str, *, output_type: None = None, **options: Unpack[RunOptions]
    ) -> Run[OutputT]: ...
    @overload
    def run_stream_sync(self, prompt: str, *, output_type: type[U], **options: Unpack[RunOptions]) -> Run[U]: ...
    @overload
    def run_stream_sync(
        self, prompt: str, *, output_type: Mapping[str, Any], **options: Unpack[RunOptions]
    ) -> Run[Any]: ...

    def run_stream_sync(self, prompt: str, *, output_type: Any = None, **options: Any) -> Run[Any]:
        """``run_stream`` for a program without an event loop: iterate it with a plain ``for``,
        then read ``run.result_sync()``."""
        self._own_runner()
        run: Run[Any] = self.run_stream(prompt, output_type=output_type, **options)
        return run

    def _spec(
        self,
        output_type: Any,
        deps: Any,
        history: Sequence[Message] | None,
        limits: UsageLimits | None,
        retries: int | None,
        session: str | None,
    ) -> RunSpec:
        if history is not None and session is not None:
            raise UsageError("message_history= starts a new session: leave out session= (or drop the history)")
        return RunSpec(
            output=output_spec(output_type) if output_type is not None else self._output,
            output_retries=_retries(retries) if retries is not None else self._output_retries or 0,
            deps=deps,
            history=tuple(checked(history)) if history is not None else None,
            limits=limits if limits is not None else self._limits,
        )

    async def history(self, session: str) -> list[HistoryItem]:
        """The whole conversation of session ``session`` as stored: its messages in order (every
        reply, aborted ones too) with a ``crab.messages.HistoryAnchor`` where a compaction or handoff was
        set; ``UsageError`` for an unknown id."""
        await self.start()
        from crab._assembly.choosing import require_session

        await require_session(self._agent.store, session)
        return history_items(await self._agent.store.entries(session))

    def history_sync(self, session: str) -> list[HistoryItem]:
        """``history`` for a program without an event loop of its own."""
        return self._sync(self.history(session))

    async def turn_steps(self, session: str | None = None, *, title: str | None = None) -> TurnSteps:
        """Session ``session`` (None: a new one titled ``title``) read from the store as a turn's
        start sees it, to carry out one step of its turn with this agent's hooks, provider, tools
        and store (``crab.steps.TurnSteps``: for a driver that runs ``crab.steps.TurnMachine``
        elsewhere, docs/library.md#steps); ``crab.steps.SessionGone`` (a ``UsageError``) when the
        store has no such session or it belongs to another workspace."""
        await self.start()
        from crab._loop.turn_steps import turn_steps

        asker = SessionAsker(self._ask) if self._ask is not None else None  # kept by TurnSteps.again
        return await turn_steps(self._agent, session, title, ask=asker)

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

    async def _session(self, session_id: str | None, history: tuple[Message, ...] | None = None) -> Session:
        await self.start()
        if session_id is None:
            session = await self._agent.new_session()
            if history:
                await self._seed(session, history)
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
        routes, session_id = self._routes, session.id
        session.caught_up = lambda: routes.caught_up(session_id)
        self._sessions[session.id] = session
        return session

    async def _seed(self, session: Session, history: tuple[Message, ...]) -> None:
        """Record ``history`` as the start of the new ``session`` (stored, so a resume sees it too);
        the context is the repaired one every request gets (each call paired)."""
        from crab._values.history import repair

        recorder = self._agent.recorder
        for message in history:
            if isinstance(message, ToolResultMessage):
                await recorder.append(session, "tool_result", await recorder.payload(message))
                session.messages.append(message)
            else:
                await recorder.message(session, message)
        session.messages = repair(session.messages)


ROUTES = "program-runs"
"""The plugin name of an agent's ``RunRoutes`` (beside ``program-tools``)."""


class RunRoutes:
    """Hands each run the events of its session, and every run the agent's notices.

    A ``crab_event`` observer, not a listener: the hook is told which session an event belongs
    to (a listener is not), so a run never sees another session's events.
    """

    def __init__(self) -> None:
        self.runs: dict[str, Run[Any]] = {}

    @hookimpl
    def crab_before_model_call(
        self, request: ModelRequest, session_id: str
    ) -> ModelRequest | Coroutine[Any, Any, None] | None:
        run = self.runs.get(session_id)
        return run._before_model_call(request) if run is not None else None

    @hookimpl
    def crab_before_tool_call(self, ctx: ToolContext) -> Deny | None:
        run = self.runs.get(ctx.session_id)
        watch = run._watch if run is not None else None
        if watch is None or watch.exceeded is None:
            return None
        return Deny(f"Not run: {watch.exceeded}.", end_turn=True)

    async def caught_up(self, session_id: str) -> None:
        """Until the program has handled every event of the session's run so far (``Session.caught_up``):
        a question reaches ``ask=`` after the ``ToolCallEvent`` it is about reached the program."""
        run = self.runs.get(session_id)
        if run is not None:
            await run._caught_up()

    @hookimpl
    def crab_event(self, event: Event, session_id: str) -> None:
        if session_id:
            run = self.runs.get(session_id)
            if run is not None:
                run._take(event)
        elif isinstance(event, NoticeEvent):  # a plugin failure, a config warning: the whole agent's
            for run in list(self.runs.values()):
                run._take(event)


class Run(Generic[OutputT]):
    """One input to an agent, its events as they happen, and its ``RunResult`` at the end.

    ``async for event in run`` (or ``for`` from ``run_stream_sync``) yields the typed events a
    renderer gets: ``TurnStarted``, ``TextDelta``, ``ToolCallEvent``, ``ToolResultEvent``,
    ``UsageEvent``, ``NoticeEvent``, ``TurnEnded``… While it runs, ``steer(text)`` hands the model
    more input after the current tool call, ``follow_up(text)`` queues an input for after the
    turn (the run ends when that one has), and ``abort()`` stops it (every open tool call still
    gets its result, so the session stays valid).

    A typed run (``output_type``) checks the answer when the turn ends: one that does not fit goes
    back to the model with the reason (``RETRY``, at most ``output_retries`` times), and
    ``result()`` raises ``crab.OutputError`` when none fits; ``stream_output()`` yields the
    answer's partial value as it streams. A run past its ``UsageLimits`` is aborted (its calls
    paired) and ``result()`` raises ``crab.messages.UsageLimitExceeded``. Both errors carry the run's
    ``RunResult`` as ``.result``.
    """

    def __init__(
        self,
        owner: Agent[Any],
        prompt: str,
        session_id: str | None,
        images: tuple[ImagePart, ...] = (),
        spec: RunSpec | None = None,
    ) -> None:
        self._owner = owner
        self._prompt = prompt
        self._images = images
        self._wanted = session_id
        self._spec = spec or RunSpec()
        self._session: Session | None = None
        self._events: asyncio.Queue[Event | None] | None = None
        self._collector = ResultCollector()
        self._tasks: list[asyncio.Task[TurnOutcome]] = []
        self._result: RunResult[OutputT] | None = None
        self._error: OutputError | UsageLimitExceeded | None = None
        self._pending: list[tuple[str, bool]] = []
        self._given = 0  # events queued for the program
        self._handed = 0  # events the program was handed
        self._handled = 0  # events the program is done with: it asked for the next one
        self._waiting: list[asyncio.Future[None]] = []  # questions waiting for _handled
        self._before: list[Message] = []
        self._attempts = 1
        self._watch = LimitWatch(self._spec.limits) if self._spec.limits is not None else None

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
        session = await self._owner._session(self._wanted, self._spec.history)
        routes = self._owner._routes.runs
        if session.id in routes:
            raise UsageError(
                f"session {session.id} has a run in progress: give it more with run.steer(text) or "
                "run.follow_up(text), or wait for its result"
            )
        self._session = session
        self._events = asyncio.Queue()
        routes[session.id] = self
        self._before = list(session.messages)
        collector = self._collector
        session.state[RUN_STATE] = RunState(self._spec.deps, lambda: collector.usage)
        self._submit(self._prompt_text(), steer=False, images=self._images)
        for text, steer in self._pending:
            self._submit(text, steer=steer)
        self._pending.clear()

    def _prompt_text(self) -> str:
        """The prompt, and where the provider has no structured output, the schema the answer must match."""
        output = self._spec.output
        return self._prompt if output is None else prompted(self._prompt, output, self._owner._agent.provider)

    def _take(self, event: Event) -> None:
        self._collector.handle(event)
        if self._watch is not None:
            self._watch.see(event)  # past a limit, no tool runs and no request is sent (below)
        if self._events is not None:
            self._events.put_nowait(event)
            self._given += 1

    async def _caught_up(self) -> None:
        target = self._given
        while self._handled < target and self._session is not None:
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            await waiter

    def _handled_all_handed(self) -> None:
        self._handled = self._handed
        waiting, self._waiting = self._waiting, []
        for waiter in waiting:
            if not waiter.done():
                waiter.set_result(None)

    def _before_model_call(self, request: ModelRequest) -> ModelRequest | Coroutine[Any, Any, None] | None:
        """A request of this run's session: stopped before it is sent when the run crossed a limit
        or it would cross ``requests``; carrying the output schema for a provider with structured
        output (``options["output_schema"]``)."""
        watch = self._watch
        if watch is not None and (watch.exceeded is not None or watch.before_request()):
            self.abort()
            # The abort cancels the turn's task at its next suspension; a turn that never suspends
            # (a scripted provider, async tools) would otherwise send this request first.
            return asyncio.sleep(0)
        options = dict(request.options)
        if self._spec.output is not None:
            options["output_schema"] = self._spec.output.option()
        if self._spec.thinking is not None:
            options["thinking"] = self._spec.thinking  # crab-thinking maps it (or names the provider once)
        return replace(request, options=options) if options != request.options else None

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
        self._handled_all_handed()  # the program asks for more: it is done with what it was handed
        while True:
            if self._result is not None and self._events.empty():
                return None
            try:
                event = await self._events.get()
            except asyncio.CancelledError:
                await self._stop()
                raise
            if event is not None:
                self._handed += 1
                return event
            await self._finish()
            if self._result is not None:  # else an answer went back to the model: its turn's events follow
                return None

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._aiter()

    async def _aiter(self) -> AsyncIterator[Event]:
        while (event := await self._next()) is not None:
            yield event

    def __iter__(self) -> Iterator[Event]:
        runner = self._owner._own_runner()
        while (event := _run(runner, self._next())) is not None:
            yield event

    async def result(self) -> RunResult[OutputT]:
        """Wait for the run to end (events not iterated are dropped) and return its result;
        ``crab.OutputError`` or ``crab.messages.UsageLimitExceeded`` (with ``.result``) when it failed so."""
        while self._result is None:
            await self._next()
        if self._error is not None:
            raise self._error
        return self._result

    def result_sync(self) -> RunResult[OutputT]:
        """``result`` for a run from ``run_stream_sync``."""
        result: RunResult[OutputT] = _run(self._owner._own_runner(), self.result())
        return result

    async def stream_output(self) -> AsyncIterator[Any]:
        """The answer as it streams: for a typed run, each new partial value of its JSON (dicts and
        lists, not yet validated: ``await run.result()`` gives the typed ``output``); for an
        untyped one, the text so far. Text before a tool call is not the answer and starts over."""
        partial = PartialOutput(self._spec.output)
        async for event in self:
            value = partial.see(event)
            if value is not None:
                yield value

    def stream_output_sync(self) -> Iterator[Any]:
        """``stream_output`` for a run from ``run_stream_sync``."""
        partial = PartialOutput(self._spec.output)
        for event in self:
            value = partial.see(event)
            if value is not None:
                yield value

    async def _stop(self) -> None:
        """The caller was cancelled (Ctrl-C): abort the turn and let it pair its open calls."""
        self.abort()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._leave_routes()

    async def _finish(self) -> None:
        try:
            outcomes = [task.result() for task in self._tasks]  # a failure of the loop itself raises here
        except BaseException:
            self._leave_routes()
            raise
        session = self._session
        assert session is not None
        redact = self._owner._agent.redactor.text
        result: RunResult[Any] = self._collector.result(session.id, outcomes[0], outcomes, redact)
        known = {id(message) for message in self._before}
        result = replace(result, messages=tuple(m for m in session.messages if id(m) not in known))
        output = self._spec.output
        if self._watch is not None and self._watch.exceeded is not None:
            self._error = self._watch.exceeded
            result = replace(result, output=None)
        elif output is not None:
            value: Any = None
            if result.stop == "end" and result.error is None:
                try:
                    value = output.check(result.text)
                except Invalid as exc:
                    if self._attempts <= self._spec.output_retries:
                        self._attempts += 1
                        self._submit(RETRY.format(reason=str(exc)), steer=False)
                        return  # the run goes on: the model answers again
                    self._error = OutputError(exc.field, exc.reason, result.text, self._attempts)
            result = replace(result, output=value)
        self._leave_routes()
        session.state.pop(RUN_STATE, None)
        if self._error is not None:
            self._error.result = result
        self._result = result

    def _leave_routes(self) -> None:
        if self._session is not None and self._owner._routes.runs.get(self._session.id) is self:
            del self._owner._routes.runs[self._session.id]
        self._handed = self._given  # nobody takes events any more: no question waits for them
        self._handled_all_handed()


ImageInput = ImagePart | bytes | str | Path
"""What a run takes as an image: a ``crab.messages.ImagePart``, the bytes of one, or a file's path."""


class PartialOutput:
    """Turns a run's events into the partial values ``Run.stream_output`` yields."""

    def __init__(self, output: OutputSpec | None) -> None:
        self.output = output
        self.text = ""
        self.last: Any = None

    def see(self, event: Event) -> Any:
        """The new partial value ``event`` gives, or None."""
        if isinstance(event, TurnStarted | ToolCallEvent):
            self.text, self.last = "", None
            return None
        if not isinstance(event, TextDelta):
            return None
        self.text += event.text
        value = self.output.partial(self.text) if self.output is not None else self.text
        if value is None or value == self.last:
            return None
        self.last = value
        return value


def _retries(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"output_retries takes a whole number of at least 0, not {value!r}")
    return value


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
