"""The client's side: connect to Temporal (one line and exit 2 when it cannot be reached), hand a
session's turn to its workflow, and show the turn as it runs on whichever worker, from the
entries the workers store (the store is the conversation; Temporal carries only ids)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, Literal

import crab
from crab import steps

from crab_temporal.ceiling import held, narrower
from crab_temporal.settings import TemporalSettings
from crab_temporal.workflow import WORKFLOW, workflow_id

CONNECT_TIMEOUT = 10.0
POLL = 0.2
"""Seconds between two reads of the session's new entries while the turn runs."""


NO_WORKER_AFTER = 10.0
QUERY_EVERY = 1.0
"""Longest wait between two progress queries while nothing changes (``QueryCadence``)."""
NO_WORKER = "no crab worker has taken this turn yet: start one with `crab worker` (task queue {queue})"
QUERY_TIMEOUT = 2.0
LOST = "Temporal at {address} does not answer: waiting for it (the turn goes on once it is back)"
SETTLE_WAIT = 1.0
"""Seconds the client waits, after Ctrl-C (or a channel's abort), for the aborted turn to settle on
its worker before it ends as aborted anyway: the turn settles there all the same (each open call
gets its interrupted result), and ``crab run``'s whole clean-up after a signal has 1.9 s, of which
the rest (closing the agent and the client, ending tool processes) took 0.3 s measured."""
STOPPING = "the turn is stopping on its worker: its tool calls get their interrupted results there"
BUSY_WAIT = 30.0
"""Seconds a new turn waits for the session's running workflow to end (most often a turn just
aborted and still settling on its worker) before it is refused."""
BUSY = "the session's previous turn is still ending on its worker: waiting for it (at most {seconds:g} s)"
TASK_TIMEOUT = 2.0
"""Seconds of a turn's workflow task (Temporal's default: 10). A running local step (a model call)
holds its workflow task, which the SDK's core extends at 80% of this timeout, and only then does
the worker see an ``abort`` signal and cancel the call: 1.6 s at most, not 8, of a stream the user
pays for after saying stop (bench/temporal_abort.py); a model call costs a workflow task per 1.6 s
it runs, which the bench's turns/s and server CPU per step did not show. The extension must reach
Temporal in the other 0.4 s (a worker that far from it times its tasks out). A dead worker's
local step moves to another after it too. Not workflow code: a turn replays whatever it was
started with."""
ALWAYS: dict[str, set[str]] = {}
"""Per session id, the permission classes the user allowed "always" in this process: the
in-process gate keeps them for a live session, and here each turn's workflow is handed them."""


class Unreachable(crab.ConfigError):
    """Temporal cannot be reached at the configured address."""


async def connect(settings: TemporalSettings) -> Any:
    """A ``temporalio.client.Client``; ``Unreachable`` (exit 2) when Temporal does not answer."""
    from temporalio.client import Client
    from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

    # The SDK's core logs each retried call to stderr; crab says what matters in one line instead.
    quiet = LoggingConfig(filter=TelemetryFilter(core_level="ERROR", other_level="ERROR"))
    try:
        return await asyncio.wait_for(
            Client.connect(
                settings.address,
                namespace=settings.namespace,
                tls=settings.tls,
                api_key=settings.api_key,
                runtime=Runtime(telemetry=TelemetryConfig(logging=quiet)),
            ),
            CONNECT_TIMEOUT,
        )
    except (TimeoutError, RuntimeError, OSError, ValueError) as exc:
        reason = unreachable_reason(exc)
        raise Unreachable(
            f"cannot reach Temporal at {settings.address} ({reason}): start one with `crab temporal dev`"
            " or set [plugins.temporal] address"
        ) from None


def unreachable_reason(exc: BaseException) -> str:
    """A few words for why a connection failed (the SDK's message is a nested Rust error)."""
    text = str(exc)
    if isinstance(exc, asyncio.TimeoutError):
        return "no answer"
    for needle, words in (
        ("refused", "connection refused"),
        ("dns error", "unknown host"),
        ("lookup", "unknown host"),
        ("certificate", "TLS certificate not accepted"),
        ("unauthenticated", "the API key was refused"),
        ("timed out", "no answer"),
    ):
        if needle in text.lower():
            return words
    return " ".join(text.split())[:160]


def turn_arguments(
    config: crab.Config, settings: TemporalSettings, session: steps.TurnSteps, prompt: str, ceiling: str | None = None
) -> dict[str, Any]:
    """The workflow's argument: ids and small values (the prompt as crab stores it, secrets masked).
    ``ceiling``: a permission mode narrower than this process's own for this turn (a scheduled job's)."""
    return {
        "session_id": session.session_id,
        "turn_id": secrets.token_hex(4),
        "prompt": session.redact(prompt),
        "max_iterations": int(config.get("crab.max_iterations", 25)),
        "tool_timeout": float(config.get("crab.tool_timeout", 120.0)),
        "heartbeat": settings.heartbeat,
        "question_wait": settings.question_wait,
        "always": sorted(ALWAYS.get(session.session_id, ())),
        # the workers hold each tool call to the narrower of this and their own mode (crab_temporal.ceiling)
        "ceiling": narrower(str(config.get("crab.permissions") or "ask"), ceiling or "yolo"),
    }


async def start_turn(
    client: Any, settings: TemporalSettings, arguments: dict[str, Any], waiting: Callable[[str], None] | None = None
) -> Any:
    """Start the session's workflow. While one of that session is running (an aborted turn still
    settling), wait for its end, at most ``BUSY_WAIT`` seconds (``waiting`` is told once), then
    ``UsageError``; one line (``refused_start``) when Temporal refuses it (a prompt beyond its
    payload limit, no such namespace)."""
    from temporalio.exceptions import WorkflowAlreadyStartedError
    from temporalio.service import RPCError

    session_id = arguments["session_id"]
    end = time.monotonic() + BUSY_WAIT
    while True:
        try:
            return await client.start_workflow(
                WORKFLOW,
                arguments,
                id=workflow_id(session_id),
                task_queue=settings.task_queue,
                task_timeout=timedelta(seconds=TASK_TIMEOUT),
            )
        except WorkflowAlreadyStartedError:
            left = end - time.monotonic()
            if left <= 0:
                raise crab.UsageError(
                    f"a turn of session {session_id} is running on Temporal: wait for its end, then continue it"
                ) from None
        except RPCError as exc:  # Temporal refused the start: one line saying why, as for an unreachable server
            raise refused_start(exc, settings, arguments) from None
        if waiting is not None:
            waiting(BUSY.format(seconds=BUSY_WAIT))
            waiting = None
        await _ended(client.get_workflow_handle(workflow_id(session_id)), left)


async def _ended(handle: Any, seconds: float) -> None:
    """Once the workflow ``handle`` names has ended (however), or ``seconds`` have passed."""
    started = time.monotonic()
    try:
        await asyncio.wait_for(handle.result(), seconds)
    except Exception:  # ended in failure, timed out, or Temporal away: the next start says which
        # A wait that came back at once (the server's answer, not the workflow's end): pace the retry.
        await asyncio.sleep(max(0.0, min(POLL, seconds) - (time.monotonic() - started)))


def refused_start(exc: Any, settings: TemporalSettings, arguments: dict[str, Any]) -> crab.CrabError:
    """The error for a turn whose workflow Temporal would not start (``exc``, an ``RPCError``)."""
    from temporalio.service import RPCStatusCode

    text = " ".join(str(exc).split())[:300]
    if exc.status == RPCStatusCode.INVALID_ARGUMENT and "size exceeds" in text:
        size = len(str(arguments.get("prompt", "")))
        return crab.UsageError(
            f"Temporal does not take this turn: the prompt is {size:,} characters, more than its payload "
            "limit; put the text in a file in the workspace and ask about the file"
        )
    if exc.status == RPCStatusCode.NOT_FOUND and "namespace" in text.lower():
        return no_namespace(settings)
    return crab.CrabError(f"Temporal at {settings.address} refused the turn: {text}")


def no_namespace(settings: TemporalSettings) -> crab.ConfigError:
    return crab.ConfigError(
        f"Temporal at {settings.address} has no namespace {settings.namespace}: create it "
        f"(`temporal operator namespace create -n {settings.namespace}`) or set [plugins.temporal] namespace"
    )


async def check_namespace(client: Any, settings: TemporalSettings) -> None:
    """``no_namespace`` (exit 2) when Temporal has no such namespace: a worker would otherwise fail
    its own check after it said it runs, with the SDK's traceback."""
    from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
    from temporalio.service import RPCError, RPCStatusCode

    try:
        await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=settings.namespace))
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise no_namespace(settings) from None
        raise crab.CrabError(f"Temporal at {settings.address} failed: {' '.join(str(exc).split())[:300]}") from None


class QueryCadence:
    """When the client asks the workflow for its progress (questions, notices, whether a worker has
    the turn). A query costs a workflow task on a worker and the server's CPU (measured: one every
    0.2 s multiplied a step's CPU by four, docs/temporal.md), while the store, read every ``POLL``,
    costs them nothing: so the workflow is queried every ``POLL`` until a worker has the turn and
    right after the store changed (a stored reply is when its calls' questions come), then less and
    less often while nothing changes, at most ``QUERY_EVERY`` apart (a question waits that long at
    worst before it is shown)."""

    def __init__(self) -> None:
        self.next = 0.0
        self.interval = POLL

    def due(self, now: float, fresh: bool) -> bool:
        return fresh or now >= self.next - POLL / 2  # a poll that wakes a little early still counts

    def queried(self, now: float, fresh: bool, answered: bool) -> None:
        self.interval = POLL if fresh or not answered else min(self.interval * 2, QUERY_EVERY)
        self.next = now + self.interval


class TurnView:
    """Shows what the workers store for a session as the events a ``crab run`` shows."""

    def __init__(self, session: steps.TurnSteps, seen: int) -> None:
        self.session = session
        self.seen = seen
        self.notices = 0
        self.lock = asyncio.Lock()  # the poll and a question's catch-up show each entry once

    async def show_new(self, progress: dict[str, Any] | None = None) -> bool:
        """Show what was stored since, and ``progress``'s new notices; whether anything was stored."""
        async with self.lock:
            entries = await self.session.stored()
            fresh, self.seen = entries[self.seen :], len(entries)
            for event in events_of(fresh):
                self.session.emit(event)
        self.show_notices(progress)
        return bool(fresh)

    def show_notices(self, progress: dict[str, Any] | None) -> None:
        for level, text in (progress or {}).get("notices", [])[self.notices :]:
            self.notices += 1
            self.session.emit(crab.events.NoticeEvent(text, "warning" if level == "warning" else "info"))


def events_of(entries: Sequence[crab.storage.Entry]) -> list[crab.events.Event]:
    """The events a stored reply or result stands for, in the order an in-process turn shows them:
    a model call's ``model_call`` start, its text and calls, its usage and its ``model_call`` end
    (from the ``model_call`` record stored after the reply), then each result."""
    events: list[crab.events.Event] = []
    calling = False  # a reply shown whose model call's end is not yet
    for entry in entries:
        if entry.type == "event" and entry.payload.get("kind") == "model_call":
            events.extend(_model_call(entry, started=calling))
            calling = False
        elif entry.type == "message" and entry.payload.get("role") == "assistant":
            message = crab.messages.message_from_dict(dict(entry.payload))
            assert isinstance(message, crab.messages.AssistantMessage)
            provider, model = message.provider or "", message.model or ""
            events.append(crab.events.ModelCallEvent(entry.session_id, "start", provider, model))
            calling = True
            if message.content and message.replayable and message.content != steps.NO_REPLY:
                events.append(crab.events.TextDelta(message.content))
            if message.stop_reason == "error" and message.error:
                events.append(crab.events.ErrorEvent(message.error))
            events.extend(crab.events.ToolCallEvent(call) for call in message.tool_calls)
        elif entry.type == "tool_result":
            result = crab.messages.message_from_dict(dict(entry.payload))
            assert isinstance(result, crab.messages.ToolResultMessage)
            events.append(crab.events.ToolResultEvent(result.call_id, result.name, result.content, result.is_error))
    return events


def _model_call(entry: crab.storage.Entry, started: bool) -> list[crab.events.Event]:
    """The usage and ``model_call`` end a stored ``model_call`` record stands for (its start too,
    when no stored reply showed it: a compaction's summary)."""
    payload = entry.payload
    provider, model = str(payload.get("provider") or ""), str(payload.get("model") or "")
    purpose: Literal["turn", "compaction", "plugin"] = "turn"
    if payload.get("purpose") in ("compaction", "plugin"):
        purpose = payload["purpose"]
    usage = crab.messages.usage_from_dict(dict(payload["usage"])) if payload.get("usage") else None
    events: list[crab.events.Event] = []
    if not started:
        events.append(crab.events.ModelCallEvent(entry.session_id, "start", provider, model, purpose))
    if usage is not None:
        events.append(crab.events.UsageEvent(usage))
    stop = payload.get("stop_reason")
    end = crab.events.ModelCallEvent(
        entry.session_id, "end", provider, model, purpose, model, stop, payload.get("error_kind"), usage
    )
    return [*events, end]


async def run_turn(
    agent: crab.Agent, settings: TemporalSettings, prompt: str, session_id: str | None
) -> dict[str, Any]:
    """One turn of ``session_id`` (None: a new session) on Temporal, shown as it runs; its result
    (``stop``, ``error``, ``text``, ``session_id``). Ctrl-C (a cancellation) aborts the turn on its
    worker and waits for it to settle, at most ``SETTLE_WAIT`` seconds; a second one stops waiting."""
    client = await connect(settings)
    # A new session, or the one named (``SessionGone``, a usage error, when the store has none).
    session = await agent.turn_steps(session_id, title=" ".join(prompt.split())[:60])
    return await drive_turn(client, session, agent.config, settings, prompt)


async def engine_turn(session: steps.TurnSteps, prompt: str, config: crab.Config) -> steps.TurnOutcome:
    """``crab run --engine temporal`` and ``[serve] engine = "temporal"``: the turn handed to the
    workers and shown as an in-process turn shows (``crab_turn_engines``)."""
    from crab_temporal.serve import shared_client

    settings = TemporalSettings.from_config(config)
    result = await drive_turn(await shared_client(settings), session, config, settings, prompt)
    return steps.TurnOutcome(
        stop=result["stop"],
        text=str(result.get("text") or ""),
        error=result.get("error"),
        turn_id=str(result["turn_id"]),
        session_id=session.session_id,
        tool_calls=int(result.get("tool_calls") or 0),
    )


async def drive_turn(
    client: Any, session: steps.TurnSteps, config: crab.Config, settings: TemporalSettings, prompt: str
) -> dict[str, Any]:
    """Start the turn's workflow and show it until it ends (``run_turn``); its tools' questions
    are asked here (``crab_temporal.asking.Answering``)."""
    from crab_temporal.asking import Answering

    shared_store(session)
    session_id = session.session_id
    arguments = turn_arguments(config, settings, session, prompt, held(config, session_id))
    start = len(await session.stored())
    view = TurnView(session, start)
    handle = await start_turn(client, settings, arguments, lambda text: session.emit(crab.events.NoticeEvent(text)))
    session.emit(crab.events.TurnStarted(session_id, arguments["turn_id"], prompt))
    waiting = asyncio.ensure_future(_result(handle, session, settings.address))
    questions = Answering(handle, session, view.show_new)
    aborted: float | None = None  # when Ctrl-C (or the channel's abort) came
    started, told, answered = time.monotonic(), False, False
    steered = 0  # the steering inputs sent to the workflow so far
    cadence = QueryCadence()
    while not waiting.done():
        try:
            if aborted is not None:
                left = aborted + SETTLE_WAIT - time.monotonic()
                if left <= 0:
                    break
                # Aborting: no queries (one may take QUERY_TIMEOUT), only the store, for what settled.
                await asyncio.wait([waiting], timeout=min(POLL, left))
                await view.show_new()
                continue
            await asyncio.wait([waiting], timeout=POLL)
            steered = await _steer(handle, session, steered, waiting)
            fresh = await view.show_new()
            if cadence.due(time.monotonic(), fresh):
                progress = await _progress(handle)
                answered = answered or progress is not None
                cadence.queried(time.monotonic(), fresh, answered)
                questions.take(progress)
                view.show_notices(progress)
            if not answered and not told and time.monotonic() - started > NO_WORKER_AFTER:
                told = True  # no worker ever answered: most likely none polls this task queue
                notice = crab.events.NoticeEvent(NO_WORKER.format(queue=settings.task_queue), "warning")
                session.emit(notice)
        except asyncio.CancelledError:
            if aborted is not None:  # a second Ctrl-C: stop waiting for the turn to settle
                waiting.cancel()
                raise
            aborted = time.monotonic()  # Ctrl-C: the turn is aborted where it runs, and settles
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            await questions.close()  # a question on the screen is taken down: its turn is over
            await _abort(handle, SETTLE_WAIT)
    await questions.close()
    if waiting.done():
        result: dict[str, Any] = dict(waiting.result())
        progress = await _progress(handle)
    else:
        # Not settled in time: it settles on its worker (the next turn of the session waits for
        # that, ``start_turn``); here the turn ends as aborted.
        waiting.cancel()
        session.emit(crab.events.NoticeEvent(STOPPING, "warning"))
        result = {"stop": "aborted", "error": None, "text": "", "turn_id": arguments["turn_id"], "tool_calls": 0}
        progress = None
    ALWAYS.setdefault(session_id, set()).update(str(p) for p in result.get("always") or ())
    # Steering the workflow did not take (it came as the turn ended) runs as the next turn.
    session.took_steering(int(result.get("steered") or 0))
    await view.show_new(progress)
    result["text"] = whole_answer(await session.stored(), start, str(result.get("text") or ""))
    if result.get("shown") and result.get("error"):
        session.emit(crab.events.ErrorEvent(str(result["error"]), "plugin"))
    session.emit(
        crab.events.TurnEnded(
            session_id, str(result["turn_id"]), result["stop"], result.get("text", ""), None, result.get("error")
        )
    )
    result["session_id"] = session_id
    return result


def shared_store(session: steps.TurnSteps) -> None:
    """``UsageError`` (exit 2, nothing started) when the session lives where no worker can read it."""
    if session.store_name == "memory":
        raise crab.UsageError(
            "a turn on Temporal needs a store its workers share, and the memory store keeps sessions in "
            'this process only: set [crab] store = "sqlite" (or --store sqlite; several machines: postgres)'
        )


def whole_answer(entries: Sequence[crab.storage.Entry], start: int, text: str) -> str:
    """The turn's answer whole: the workflow holds a reply's text cut at ``wire.REPLY_TEXT_CAP``, the
    store holds all of it (the last reply this turn stored, when it begins with ``text``; masking
    may have made the cut text shorter than the cap, so any length is looked up)."""
    if not text:  # no answer (a turn aborted before it settled): nothing to complete
        return text
    for entry in reversed(entries[start:]):
        if entry.type == "message" and entry.payload.get("role") == "assistant":
            content = entry.payload.get("content")
            return content if isinstance(content, str) and content.startswith(text) else text
    return text


async def _result(handle: Any, session: steps.TurnSteps, address: str) -> dict[str, Any]:
    """The workflow's result, waited for through an outage of Temporal: the turn goes on on the
    workers once it is back, and so does this wait."""
    from temporalio.client import WorkflowFailureError
    from temporalio.service import RPCError, RPCStatusCode

    told = False
    while True:
        try:
            return dict(await handle.result())
        except WorkflowFailureError as exc:  # the workflow itself failed (a bug, a worker's error): one line
            raise crab.CrabError(f"the turn's workflow failed on Temporal: {failure_reason(exc)}") from None
        except RPCError as exc:
            if exc.status != RPCStatusCode.UNAVAILABLE:
                raise crab.CrabError(f"Temporal at {address} failed: {exc}") from None
            if not told:
                told = True
                notice = crab.events.NoticeEvent(LOST.format(address=address), "warning")
                session.emit(notice)
            await asyncio.sleep(1.0)


def failure_reason(exc: BaseException) -> str:
    """The innermost cause's message of a workflow failure, on one line."""
    cause: BaseException = exc
    while cause.__cause__ is not None or getattr(cause, "cause", None) is not None:
        cause = getattr(cause, "cause", None) or cause.__cause__  # type: ignore[assignment]
    text = " ".join(str(cause).split()) or type(cause).__name__
    return text[:500]


async def _steer(handle: Any, session: steps.TurnSteps, sent: int, waiting: asyncio.Future[Any]) -> int:
    """Send the workflow the steering inputs (a second message while the turn runs, under ``crab
    serve``) that came since the last time; how many are sent now."""
    from temporalio.service import RPCError

    for text in session.steering()[sent:]:
        if waiting.done():
            break
        try:
            await handle.signal("steer", text)
        except RPCError:  # the turn ended (or Temporal is away): the rest runs as the next turn
            break
        sent += 1
    return sent


async def _abort(handle: Any, seconds: float) -> None:
    from temporalio.service import RPCError

    try:
        await asyncio.wait_for(handle.signal("abort"), seconds)
    except (RPCError, TimeoutError):  # Temporal is away: the turn is not stopped (it goes on there)
        pass


async def _progress(handle: Any) -> dict[str, Any] | None:
    try:
        return dict(await asyncio.wait_for(handle.query("progress"), QUERY_TIMEOUT))
    except Exception:  # the workflow ended (or its worker is between tasks): the result says the rest
        return None
