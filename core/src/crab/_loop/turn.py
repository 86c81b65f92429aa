"""One turn's driver: it asks the turn's state machine (``crab._loop.steps``) for the next step and
carries it out in this process (hooks through the dispatcher, model calls through ``ModelCalls``,
tools through ``ToolRunner``, entries through the ``Recorder``, events through emit), given a
``ModelContext``, never the agent (docs/architecture.md#the-agent-and-the-turn)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar

from crab._contracts.errors import CrabError, PluginError
from crab._contracts.events import ErrorEvent, Event, ToolCallEvent, ToolResultEvent, TurnEnded, TurnStarted, TurnStop
from crab._contracts.messages import AssistantMessage, ToolCall, ToolResultMessage, Usage, UserMessage
from crab._contracts.providers import ModelRequest
from crab._contracts.tools import Tool, ToolContext, ToolResult
from crab._loop import steps
from crab._loop.model_call import Reply
from crab._loop.model_context import ModelContext, described, with_full_schema
from crab._loop.session import QueuedInput, Session, TurnOutcome
from crab._loop.steps import (
    REFUSED,
    Accept,
    Answered,
    Ask,
    CallModel,
    CheckEnd,
    Compact,
    Continued,
    Done,
    EndTurn,
    Input,
    ModelReplied,
    Notify,
    OverBudget,
    Overflowed,
    Prompt,
    Record,
    RunTools,
    Settle,
    ShowCalls,
    Steered,
    Step,
    StepSettings,
    Submit,
    Submitted,
    TakeSteering,
    ToolsRan,
    TurnMachine,
    result_id,
)
from crab._loop.tool_runner import ToolRunner
from crab._values.history import INTERRUPTED, repair
from crab._values.message_json import message_to_dict
from crab._values.model_choice import ModelChoice
from crab._values.model_request import Partial

__all__ = ["Turn", "today"]

Q = TypeVar("Q")
A = TypeVar("A")


def today() -> str:
    """The local date the date note tells (a function so tests can fix it)."""
    return time.strftime("%Y-%m-%d")


class Turn:
    """Runs one input of one session to its end by carrying out the steps of its ``TurnMachine``;
    ``run`` never raises except on cancellation from outside or a plugin failure in strict mode
    (``PluginError``).

    Its invariants: every recorded tool call ends with exactly one recorded result (after an
    abort, a failure or a stop by a plugin too), and aborted or failed replies are stored but
    never replayed.
    """

    def __init__(self, context: ModelContext, session: Session, item: QueuedInput, queue: Any) -> None:
        self.context = context
        self.session = session
        self.item = item
        self.queue = queue
        self.id = secrets.token_hex(4)
        self.usage = Usage()
        self.text = ""
        self.tool_calls = 0
        self.partial: Partial | None = None
        self.shown: frozenset[str] = frozenset()
        """Ids of the calls the last model call's stream showed (``ModelReplied.shown``)."""
        self.replied: AssistantMessage | None = None
        """The reply the current ``CallModel`` recorded (an abort before the step is answered pairs its calls)."""
        self.results: dict[str, ToolResultMessage] = {}
        self.steered: list[QueuedInput] = []
        self._inputs: dict[str, tuple[QueuedInput, Any]] = {}  # prompt id -> the input and its queue
        self._system: str | None = None  # gathered once per turn, again after a compaction
        self._built: ModelRequest | None = None  # the request the current CallModel built
        self._held: Reply | None = None  # a reply whose context overflow waits for a compaction
        self.choice: ModelChoice = context.calls.choose(session)
        """The provider and model of the last request (``/model`` takes effect at the next one)."""
        self.machine = TurnMachine(
            session.id,
            self.id,
            self._prompt(item, queue),
            session.messages,
            StepSettings(context.settings.max_iterations),
            may_answer_for_others=not session.shared,
        )
        session.shared = False  # from this turn on, the session's last prompt is this process's own
        self.alone = False
        """True when steps are carried out one at a time for a driver elsewhere (``TurnSteps``): the
        machine that asked for them is that driver's, so this one's own keeps no ``Ask`` state."""
        self._running: RunTools | None = None  # the RunTools under way (its calls' Ask ids)

    def emit(self, event: Event) -> None:
        self.context.calls.emit(event, self.session.id)

    def _prompt(self, item: QueuedInput, queue: Any) -> Prompt:
        prompt = Prompt(f"{self.id}.p{len(self._inputs)}", item.text, item.images)
        self._inputs[prompt.id] = (item, queue)
        return prompt

    async def run(self) -> TurnOutcome:
        session = self.session
        self.emit(TurnStarted(session.id, self.id, self.item.text))
        stop: TurnStop
        error: str | None = None
        try:
            stop, error = await self._drive()
        except asyncio.CancelledError:
            await self._abort_to_the_end("aborted")
            stop = "aborted"
            if not session.abort_requested:
                raise
        except PluginError:  # strict mode: pair what is open, then end the run (exit 2)
            await self._abort("error")
            raise
        except Exception as exc:
            error = str(exc) if isinstance(exc, CrabError) else f"internal error: {type(exc).__name__}: {exc}"
            self.emit(ErrorEvent(error, "unknown"))
            await self._abort("error")
            stop = "error"
        finally:
            self.context.recorder.forget(session)
        self.text, self.tool_calls = self.machine.text, self.machine.tool_calls
        self.usage, session.side_usage = self.usage + session.side_usage, Usage()
        outcome = TurnOutcome(
            stop=stop,
            text=self.text,
            usage=self.usage,
            error=error,
            turn_id=self.id,
            session_id=session.id,
            tool_calls=self.tool_calls,
        )
        for steered in self.steered:
            if not steered.outcome.done():
                steered.outcome.set_result(replace(outcome, error=None, tool_calls=0))
        window = self.context.known_window(session)
        self.emit(TurnEnded(session.id, self.id, stop, self.text, self.usage, error, self.choice.model, window))
        return outcome

    async def _drive(self) -> tuple[TurnStop, str | None]:
        """Carry out the machine's steps until it ends the turn."""
        machine = self.machine
        step = machine.step
        while not isinstance(step, EndTurn):
            step = machine.send(await self.carry_out(step))
        if step.shown and step.error is not None:
            self.emit(ErrorEvent(step.error, "plugin"))
        return step.stop, step.error

    async def carry_out(self, step: Step) -> Input:
        """One step, in this process."""
        if isinstance(step, CallModel):
            return await self._call_model(step)
        if isinstance(step, RunTools):
            return await self._run_tools(step)
        if isinstance(step, ShowCalls):
            for call in step.calls:
                self.emit(ToolCallEvent(call))
            return Done()
        if isinstance(step, Record):
            await self.context.recorder.message(self.session, step.message, step.id)
            return Done()
        if isinstance(step, TakeSteering):
            return Steered(tuple(self._prompt(item, self.session.steering) for item in self.session.steering))
        if isinstance(step, Submit):
            return await self._submit(step)
        if isinstance(step, Accept):
            item, queue = self._inputs[step.prompt.id]
            if item in queue:
                queue.remove(item)  # written: no longer in flight
            if step.steered:
                self.steered.append(item)
            return Done()
        if isinstance(step, CheckEnd):
            session = self.session
            text = await self.context.calls.dispatch.turn_end(
                session_id=session.id, workspace=session.workspace, text=step.text, continued=step.continued
            )
            return Continued(text)
        if isinstance(step, Compact):
            return await self._compact(step)
        if isinstance(step, Notify):
            self.context.notice(step.text, step.level)
            return Done()
        if isinstance(step, Settle):
            await self._settle(step)
            return Done()
        raise AssertionError(f"no driver for {step!r}")  # pragma: no cover - Step is a closed union

    async def _submit(self, step: Submit) -> Submitted:
        """Offer a prompt to ``crab_prompt_submit``; a refused one leaves its queue at once (refused
        on purpose: nothing is left in flight) and a refused steering input is answered."""
        session = self.session
        refused, context = await self.context.calls.dispatch.prompt_submit(
            prompt=step.prompt.text,
            session_id=session.id,
            workspace=session.workspace,
            config=self.context.prompt_config,
        )
        if refused is not None:
            item, queue = self._inputs[step.prompt.id]
            if item in queue:
                queue.remove(item)
            if step.steered and not item.outcome.done():
                line = REFUSED.format(reason=refused.reason)
                item.outcome.set_result(TurnOutcome(stop="error", error=line, session_id=session.id))
            return Submitted(refused=refused.reason)
        return Submitted(None, tuple(self._fitted(extra) for extra in context), today(), session.messages)

    def _fitted(self, extra: str | UserMessage) -> UserMessage:
        """A hook's context as a message, its images within the caps (a note for each left out)."""
        if isinstance(extra, str):
            return UserMessage(extra)
        if not extra.images:
            return extra
        images, notes = self.context.settings.images.fit_result(extra.images)
        return UserMessage("\n".join([extra.content, *notes]).strip(), images=images)

    async def _abort_to_the_end(self, why: str) -> None:
        """``_abort``, carried to its end whatever aborts come while it settles (Ctrl-C pressed
        again in ``crab chat``, a second /stop): cut short, it left the live session with calls the
        next request sent unanswered. Its writes are the store's, and a command's clean-up is
        bounded by the watchdog from the first signal on."""
        settling = asyncio.ensure_future(self._abort(why))
        while not settling.done():
            try:
                await asyncio.shield(settling)
            except asyncio.CancelledError:
                continue
        settling.result()

    async def _abort(self, why: str) -> None:
        """Tell the machine the turn was aborted or failed, and carry out its ``Settle``."""
        if isinstance(self.machine.step, EndTurn):  # it failed after its end (strict mode): nothing is open
            await self._settle(Settle(f"{self.id}.end", why))
            return
        step = self.machine.send(steps.Abort(why))
        assert isinstance(step, Settle)
        await self._settle(step)
        self.machine.send(Done())

    # --- model calls ------------------------------------------------------------------------

    async def _request(self) -> ModelRequest:
        """The next request as plugins leave it (``crab_before_model_call``: the tool view shapes
        its tools there). Its system prompt and tools are the session's prefix: the same bytes on
        every request until the configuration, the tool set or a compaction changes them
        (``tests/test_request_prefix.py``); whatever varies is a recorded message."""
        context, session = self.context, self.session
        if self._system is None:
            self._system = await context.system_prompt(session)
        self.choice = context.calls.choose(session)
        base, tools = await context.request(session, self._system, self.choice.model)
        request = await context.calls.prepare(session, base, tools)
        session.described = described(request.tools, tools)
        return request

    async def _call_model(self, step: CallModel) -> Input:
        """One model call of ``step``'s phase (``crab._loop.steps.CallModel``)."""
        self.replied = None  # an earlier step's reply was answered (and its calls run) already
        budget = self.context.budget(self.session)
        if step.phase == "held" and self._built is not None:
            request = self._built
            budget.hold(request)
        else:
            request = self._built = await self._request()
            if step.phase == "first" and budget.over(request):
                return OverBudget()
        reply = await self._send(request, hold_overflow=step.phase != "retry")
        if reply.overflow is not None:
            budget.overflowed(request)
            self._held = reply
            return Overflowed(reply.message)
        self._built = None
        message = reply.message
        if message.replayable:
            budget.learn(request, message.usage)
        return ModelReplied(message, self.shown)

    async def _compact(self, step: Compact) -> Input:
        compacted = await self.context.compact(self.session, step.reason)
        held, self._held = self._held, None
        if compacted is None:
            if step.reason == "overflow" and held is not None and held.overflow is not None:
                self.emit(held.overflow)
            return steps.Compacted(False)
        self.usage = self.usage + compacted.usage
        self._system = None  # the summary is in the system prompt now
        return steps.Compacted(True)

    async def _send(self, request: ModelRequest, *, hold_overflow: bool) -> Reply:
        """Stream ``request``, keeping what arrives for an abort, and record the reply."""
        partial = self.partial = Partial()
        session = self.session
        recorder = self.context.recorder

        async def record_reply(message: AssistantMessage) -> None:
            await recorder.message(session, message)
            # Stored: an abort from here on (the model_call event still being written) must not
            # store it again as a partial, and must pair its calls (the step was not answered).
            self.partial, self.replied = None, message

        reply = await self.context.calls.send(
            session,
            request,
            partial=partial,
            hold_overflow=hold_overflow,
            record_reply=record_reply,
            choice=self.choice,
        )
        self.partial = None
        self.shown = frozenset(partial.calls)
        if reply.message.usage is not None:
            self.usage = self.usage + reply.message.usage
        return reply

    # --- tools ------------------------------------------------------------------------------

    async def _run_tools(self, step: RunTools) -> ToolsRan:
        """Run (or skip) ``step``'s calls; their results join the context in call order."""
        self.results = {}
        self._running = step
        session = self.session
        stopped: str | None = None
        if step.skip is not None:
            for call in step.calls:
                await self.record_result(step, call, ToolResult(step.skip, is_error=True), 0.0)
        else:
            runner = ToolRunner(
                self.context.calls.dispatch,
                self.context.tools(),
                self.context.settings.tool_timeout,
                self._tool_context,
                lambda call, result, duration: self.record_result(step, call, result, duration),
            )
            stopped = (await runner.run_all(step.calls, lambda: bool(session.steering))).stopped
        session.messages.extend(self.results[c.id] for c in step.calls if c.id in self.results)
        self.results = {}
        return ToolsRan(stopped)

    def _tool_context(self, call: ToolCall, tool: Tool) -> ToolContext:
        ctx = self.context.tool_context(self.session, call, tool)
        ctx.add_usage = self._add_usage
        ctx.ask = self._asking(call, ctx.ask)
        ctx.question = self._asking(call, ctx.question)
        return ctx

    def _asking(self, call: ToolCall, asker: Callable[[Q], Awaitable[A]] | None) -> Callable[[Q], Awaitable[A]] | None:
        """``asker`` (the context's ``ask`` or ``question``) as the machine's ``Ask`` steps about ``call``."""
        if asker is None:
            return None
        ask = asker

        async def asked(question: Q) -> A:
            if self.alone and self._running is not None:  # the driver's machine is elsewhere
                alone = Ask(f"{result_id(self._running, call)}/ask", call, question)  # type: ignore[arg-type]
                return await self._carry_out_ask(alone, ask)
            step = self.machine.ask(call.id, question)  # type: ignore[arg-type]
            answer = await self._carry_out_ask(step, ask)
            self.machine.answer(step, Answered(answer if isinstance(answer, str) else None))
            return answer

        return asked

    async def _carry_out_ask(self, step: Ask, ask: Callable[[Q], Awaitable[A]]) -> A:
        """Ask once whoever takes the session's events has taken every one before the question
        (``Session.caught_up``): the call it is about among them."""
        if self.session.caught_up is not None:
            await self.session.caught_up()
        return await ask(step.question)  # type: ignore[arg-type]

    def _add_usage(self, usage: Usage) -> None:
        """Usage a tool call spent itself (a child session's turn) counts in this turn's."""
        self.usage = self.usage + usage

    async def record_result(self, step: RunTools, call: ToolCall, result: ToolResult, duration_ms: float) -> None:
        """Record one call's result once (a result that comes after the abort settled the call is dropped)."""
        recorder = self.context.recorder
        rid = result_id(step, call)
        if recorder.written(self.session, rid):
            return
        content = with_full_schema(result, call, self.context.tools, self.session.described)
        images, notes = self.context.settings.images.fit_result(result.images)
        if notes:
            content = "\n".join([content, *notes])
        stored = await recorder.result(
            self.session, rid, ToolResultMessage(call.id, call.name, content, result.is_error, images=images)
        )
        if stored is None:
            return
        self.results[call.id] = stored
        self.emit(ToolResultEvent(call.id, call.name, content, result.is_error, duration_ms, result.diffs))

    async def _settle(self, step: Settle) -> None:
        """After an abort or a failure: keep the partial reply out of context and pair every call."""
        session, choice = self.session, self.choice
        try:
            if step.partial and self.partial is not None and (self.partial.text or self.partial.thinking):
                stop = "aborted" if step.why == "aborted" else "error"
                partial = self.partial.message(stop, step.why, choice.provider.name, choice.model)
                await self.context.recorder.append(session, "message", message_to_dict(partial))
            self.partial = None
            reason = INTERRUPTED if step.why == "aborted" else f"Not run: the turn failed ({step.why})."
            tools = step.tools
            replied, self.replied = self.replied, None
            if tools is None and step.partial and replied is not None and replied.tool_calls:
                tools = RunTools(step.id, replied.tool_calls)  # recorded, not yet answered to the machine
            if tools is not None:
                for call in tools.calls:
                    await self.record_result(tools, call, ToolResult(reason, is_error=True), 0.0)
        except PluginError:  # strict mode: the run ends; repair pairs what is left on resume
            session.messages = repair([*session.messages, *self.results.values()])
            raise
        except Exception as exc:  # the store itself may be what failed; say so and keep the cache sane
            self.emit(ErrorEvent(f"could not record the end of the turn: {exc}", "unknown"))
        session.messages = repair([*session.messages, *self.results.values()])
        self.results = {}
