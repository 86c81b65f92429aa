"""The activities a worker runs for a turn's workflow: each carries out one step on the session as
the store holds it, so any worker may run any step, and a step carried out again (a retry after a
worker died) records nothing twice. A tool call that changes things runs at most once: its
retry finds the call started without a result and records crab's stand-in result instead."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

import crab
from crab import steps
from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from crab_temporal.ceiling import CEILING
from crab_temporal.lines import log_line
from crab_temporal.wire import reply_to_wire, user_from_wire, user_to_wire

FAILED = "Not run: the turn failed ({why})."
STARTED = "crab-temporal.tool-started"
"""The ``kind`` of the event entry a worker stores before it runs a call of a tool that changes
things: a retry that finds it with no result knows the call may have had its effect."""
RECORDING = "crab-temporal.recording"
"""The ``kind`` of the event entry a local ``record`` step stores before its message: a local
activity's attempt restarts at 1 on another worker, so only the store can say it ran before."""


# --- what the store says about a step carried out before ---------------------------------------


def last_message(entries: Sequence[crab.storage.Entry]) -> crab.storage.Entry | None:
    """The last message or tool result stored (events between are a model call's records)."""
    for entry in reversed(entries):
        if entry.type in ("message", "tool_result"):
            return entry
    return None


def find_call(entries: Sequence[crab.storage.Entry], call_id: str) -> tuple[int, crab.messages.ToolCall] | None:
    """The stored reply that asked for ``call_id`` (the last one: ids may repeat across replies)
    and the call, or None."""
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if entry.type != "message" or entry.payload.get("role") != "assistant":
            continue
        message = crab.messages.message_from_dict(dict(entry.payload))
        assert isinstance(message, crab.messages.AssistantMessage)
        for call in message.tool_calls:
            if call.id == call_id:
                return index, call
    return None


def marked(entries: Sequence[crab.storage.Entry], kind: str, step_id: str) -> int | None:
    """The index of the last event entry of ``kind`` for step ``step_id``, or None."""
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        if entry.type == "event" and entry.payload.get("kind") == kind and entry.payload.get("step") == step_id:
            return index
    return None


def has_result(entries: Sequence[crab.storage.Entry], after: int, call_id: str) -> bool:
    return any(e.type == "tool_result" and e.payload.get("call_id") == call_id for e in entries[after + 1 :])


def was_started(entries: Sequence[crab.storage.Entry], after: int, call_id: str) -> bool:
    return any(
        e.type == "event" and e.payload.get("kind") == STARTED and e.payload.get("call_id") == call_id
        for e in entries[after + 1 :]
    )


def retried() -> bool:
    """Whether this activity ran before (a worker died or the call raised)."""
    return activity.info().attempt > 1


def may_have_run() -> bool:
    """Whether this activity may have run before: retried, or local (a local activity whose worker
    died starts again at attempt 1 on another worker, which has no record of the first attempt)."""
    return retried() or activity.info().is_local


@contextlib.asynccontextmanager
async def heartbeating(every: float) -> AsyncIterator[None]:
    """Heartbeat while the body runs: a worker that dies stops them, and Temporal retries the
    activity elsewhere after the heartbeat timeout, not after the whole call's."""

    async def beat() -> None:
        # The first beat after ``every`` seconds, not at the start: the heartbeat timeout counts
        # from the start anyway, and a step shorter than ``every`` (most tool calls) costs the
        # server no heartbeat at all.
        while True:
            await asyncio.sleep(every)
            activity.heartbeat()

    if activity.info().is_local:  # no heartbeats: its workflow task's timeout notices a dead worker
        yield
        return
    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class StepActivities:
    """The activities of one worker, carried out with ``agent`` (a started ``crab.Agent``)."""

    def __init__(self, agent: crab.Agent, heartbeat: float) -> None:
        self.agent = agent
        self.heartbeat = heartbeat

    def all(self) -> list[Any]:
        return [self.begin, self.call_model, self.run_tool, self.carry_out, self.settle]

    def _exclusive(self, loaded: steps.TurnSteps, calls: Sequence[crab.messages.ToolCall]) -> frozenset[str]:
        """The names of ``calls``' tools that run alone, never beside another call."""
        return frozenset(call.name for call in calls if (tool := loaded.tool(call.name)) and tool.exclusive)

    async def _load(self, session_id: str) -> steps.TurnSteps:
        try:
            return await self.agent.turn_steps(session_id)
        except steps.SessionGone as exc:
            # The worker's operator reads one line; BENIGN keeps temporalio from logging the
            # failure with its traceback (it is crab's own refusal, not a worker's fault).
            # Bounded: the session id is the turn's input, from whoever may start workflows here.
            print(log_line(f"crab worker: refused a turn: {exc}"), file=sys.stderr, flush=True)
            raise ApplicationError(
                log_line(str(exc)), type="SessionGone", non_retryable=True, category=ApplicationErrorCategory.BENIGN
            ) from None

    @activity.defn(name="crab.begin")
    async def begin(self, session_id: str) -> dict[str, Any]:
        """The turn's start: pair the calls an earlier turn left open; whether its last prompt
        got no reply (the machine records the stand-in reply first)."""
        loaded = await self._load(session_id)
        await loaded.begin()
        messages = loaded.messages
        return {"unanswered": bool(messages) and isinstance(messages[-1], crab.messages.UserMessage)}

    @activity.defn(name="crab.call_model")
    async def call_model(self, session_id: str, step: dict[str, Any]) -> dict[str, Any]:
        """One ``CallModel``. Retried after its reply was recorded, it answers with that reply
        instead of asking the model again (a local one looks on every attempt: every model call
        follows a recorded prompt or result, so a reply stored last is this step's)."""
        loaded = await self._load(session_id)
        if may_have_run():
            last = last_message(loaded.entries)
            if last is not None and last.payload.get("role") == "assistant":
                message = crab.messages.message_from_dict(dict(last.payload))
                assert isinstance(message, crab.messages.AssistantMessage)
                exclusive = self._exclusive(loaded, message.tool_calls)
                return {
                    "kind": "replied",
                    "message": loaded.redact_payload(reply_to_wire(message, exclusive, redact=loaded.redact)),
                }
        call = steps.CallModel(step["id"], int(step["iteration"]), step["phase"], bool(step["final"]))
        async with heartbeating(self.heartbeat):
            answer = await loaded.carry_out(call)
        # The reply is the model's own, not as stored: its text, call names and error are masked
        # here as the store masks them (the ids then match the stored reply's), as the workflow
        # keeps them in Temporal's history and the client prints the turn's text from it.
        if isinstance(answer, steps.ModelReplied):
            exclusive = self._exclusive(loaded, answer.message.tool_calls)
            return {
                "kind": "replied",
                "message": loaded.redact_payload(reply_to_wire(answer.message, exclusive, redact=loaded.redact)),
            }
        if isinstance(answer, steps.Overflowed):
            return {
                "kind": "overflowed",
                "message": loaded.redact_payload(reply_to_wire(answer.message, redact=loaded.redact)),
            }
        return {"kind": "over_budget"}

    @activity.defn(name="crab.run_tool")
    async def run_tool(
        self, session_id: str, step_id: str, call_id: str, skip: str | None, ceiling: str | None = None
    ) -> dict[str, Any]:
        """One call of a ``RunTools`` (its arguments read from the stored reply): run, or ``skip``
        recorded as its result. A call that has its result already records nothing; a call of a
        tool that changes things found started and unfinished gets crab's stand-in result.
        ``ceiling``: the turn client's permission mode, the call held to the narrower of it and
        this worker's (``crab_temporal.ceiling``; absent from turns recorded before it existed)."""
        loaded = await self._load(session_id)
        found = find_call(loaded.entries, call_id)
        if found is None:
            raise ApplicationError(f"no stored reply asks for call {call_id}", type="NoCall", non_retryable=True)
        index, call = found
        if has_result(loaded.entries, index, call_id):
            return {"stopped": None, "ran": False}
        run = steps.RunTools(step_id, (call,))
        if skip is not None:
            await loaded.record_error(run, call, skip)
            return {"stopped": None, "ran": False}
        tool = loaded.tool(call.name)
        changes = tool is None or tool.permission != "read"
        if changes:
            if was_started(loaded.entries, index, call_id):
                await loaded.record_error(run, call, steps.STOPPED)
                return {"stopped": None, "ran": False}
            await loaded.mark({"kind": STARTED, "call_id": call_id, "step": step_id})
        held = CEILING.set(ceiling)
        try:
            async with heartbeating(self.heartbeat):
                ran = await loaded.carry_out(run)
        finally:
            CEILING.reset(held)
        assert isinstance(ran, steps.ToolsRan)
        # An interceptor's (a hook's) words: masked as the store masks them, as they go into the history.
        return {"stopped": None if ran.stopped is None else loaded.redact(ran.stopped), "ran": True}

    @activity.defn(name="crab.carry_out")
    async def carry_out(self, session_id: str, kind: str, step: dict[str, Any]) -> dict[str, Any]:
        """A ``Record``, ``Submit``, ``CheckEnd`` or ``Compact`` step."""
        loaded = await self._load(session_id)
        if kind == "record" and activity.info().is_local:
            # A local attempt cannot tell a retry from a first run: the mark stored before the
            # message says whether this step recorded it (a message after its mark).
            found = marked(loaded.entries, RECORDING, step["id"])
            if found is not None and last_message(loaded.entries[found + 1 :]) is not None:
                return {}  # the earlier attempt stored it
            if found is None:
                await loaded.mark({"kind": RECORDING, "step": step["id"]})
            await loaded.carry_out(steps.Record(step["id"], user_from_wire(step["message"])))
            return {}
        if kind == "record":
            message = user_from_wire(step["message"])
            last = last_message(loaded.entries)
            if retried() and last is not None and dict(last.payload) == loaded.redact_payload(user_to_wire(message)):
                return {}  # the earlier attempt stored it
            await loaded.carry_out(steps.Record(step["id"], message))
            return {}
        if kind == "submit":
            prompt = steps.Prompt(step["prompt_id"], step["text"])
            submitted = await loaded.carry_out(steps.Submit(step["id"], prompt, bool(step["steered"])), prompt)
            assert isinstance(submitted, steps.Submitted)
            # The hooks' words (a refusal's reason, the context they add) go into Temporal's
            # history: masked here, as the store masks them, since a hook may print a secret.
            return {
                "refused": None if submitted.refused is None else loaded.redact(submitted.refused),
                "context": [loaded.redact_payload(user_to_wire(message)) for message in submitted.context],
                "today": submitted.today,
                "history": [loaded.redact_payload(user_to_wire(m)) for m in date_notes(submitted.history)],
            }
        if kind == "check_end":
            text = whole_reply(loaded.entries, step["text"])
            answer = await loaded.carry_out(steps.CheckEnd(step["id"], text, int(step["continued"])))
            assert isinstance(answer, steps.Continued)
            return {"text": None if answer.text is None else loaded.redact(answer.text)}
        if kind == "compact":
            async with heartbeating(self.heartbeat):
                compacted = await loaded.carry_out(steps.Compact(step["id"], step["reason"]))
            assert isinstance(compacted, steps.Compacted)
            return {"done": compacted.done}
        raise ApplicationError(f"no step of kind {kind!r}", type="UnknownStep", non_retryable=True)

    @activity.defn(name="crab.settle")
    async def settle(self, session_id: str, step_id: str, why: str, call_ids: list[str], partial: bool) -> None:
        """After an abort or a failure: a result for each call of the step under way (or, with
        ``partial``, of the last stored reply) that has none."""
        loaded = await self._load(session_id)
        entries = loaded.entries
        if partial and not call_ids:
            last = last_message(entries)
            if last is not None and last.payload.get("role") == "assistant":
                call_ids = [str(call["id"]) for call in last.payload.get("tool_calls", [])]
        reason = steps.INTERRUPTED if why == "aborted" else FAILED.format(why=why)
        for call_id in call_ids:
            found = find_call(entries, call_id)
            if found is None or has_result(entries, found[0], call_id):
                continue
            await loaded.record_error(steps.RunTools(step_id, (found[1],)), found[1], reason)


def whole_reply(entries: Sequence[crab.storage.Entry], text: str) -> str:
    """The answer ``crab_turn_end`` is shown: the whole stored reply whose text the workflow holds
    cut at ``wire.REPLY_TEXT_CAP`` (the last message stored, when it is a reply that begins with
    ``text``), as an in-process turn shows it; else ``text`` as it came."""
    last = last_message(entries)
    if last is None or last.payload.get("role") != "assistant":
        return text
    content = last.payload.get("content")
    return content if isinstance(content, str) and content.startswith(text) else text


def date_notes(history: Sequence[crab.messages.Message]) -> list[crab.messages.Message]:
    """The last date note of ``history``: all the machine reads of it (``date_note``), so the
    whole context never travels."""
    prefix = "[crab] Today is "
    for message in reversed(history):
        if isinstance(message, crab.messages.UserMessage) and message.content.startswith(prefix):
            return [message]
    return []
