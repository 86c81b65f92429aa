"""One turn of a session as a Temporal workflow: the kernel's ``TurnMachine`` decides (it is
deterministic: it reads and writes nothing), and each step that touches the world is an activity
(``crab_temporal.activities``): a model call, each tool call, a hook, a write. Steering and abort
arrive as signals; notices and the step under way are a query. A tool that asks the user (a
permission, a ``crab.Question``) asks through updates: its worker opens the question (``ask``),
the client shows it (``shown``) and sends the user's word (``answer``), or the worker gives up
after the turn's ``question_wait`` (``give_up``); ``crab_temporal.questions`` holds the rules.

Workflow code is replayed: change what it asks for (activities, their order, their arguments)
only in ways the replay test (tests/test_temporal_replay.py) accepts, or running turns break."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    # crab's public submodules load lazily: loaded here, outside the sandbox, as a first use inside
    # it would import (and open files, which the sandbox refuses: pytest's rewriter reads .pyc files).
    import crab
    import crab.messages
    from crab import steps

    from crab_temporal.placement import LOCAL_STEPS, local_options, runs_locally
    from crab_temporal.questions import Questions, Refused
    from crab_temporal.wire import exclusive_calls, reply_from_wire, user_from_wire, user_to_wire

WORKFLOW = "crab-turn"
STOPPED_BEFORE = "Skipped: the turn was stopped before this call ran ({reason})"
"""A later batch's result once an interceptor stopped the turn (the in-process tool runner's words)."""
SKIPPED_FOR_STEERING = "Skipped due to queued user message."
TURN_CEILING = "crab-turn-ceiling"
"""The patch under which ``crab.run_tool`` gets the turn's ``ceiling`` (a fifth argument): a turn
recorded before it replays with four."""
QUESTION_WAIT = 300.0
"""Seconds a question waits for its answer when the turn's argument names none."""


def sandbox() -> Any:
    """The sandbox workflow code runs in, crab's modules passed through: the machine and its
    messages are deterministic, and one copy of them keeps ``isinstance`` true across the border."""
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    restrictions = SandboxRestrictions.default.with_passthrough_modules("crab", "crab_temporal")
    return SandboxedWorkflowRunner(restrictions=restrictions)


def workflow_id(session_id: str) -> str:
    """The id of the workflow that runs a session's turns: one at a time per session."""
    return f"crab-session-{session_id}"


class Aborted(Exception):
    """The ``abort`` signal came while a step was under way."""


@workflow.defn(name=WORKFLOW)
class TurnWorkflow:
    """Runs one input of one session to its end (``run``'s argument, a dict of small values:
    ``session_id``, ``turn_id``, ``prompt`` (redacted), ``max_iterations``, ``tool_timeout``,
    ``heartbeat``, and, from clients that ask, ``question_wait``, ``always``, the permission
    classes the user allowed for the session, and ``ceiling``, the client's permission mode, which
    the workers narrow their own to: ``crab_temporal.ceiling``); returns ``stop``, ``error``, ``text``,
    ``tool_calls``, ``always`` and ``steered`` (how many ``steer`` signals the turn took: the
    client runs the others as the next turn)."""

    def __init__(self) -> None:
        self._steering: list[str] = []
        self._taken = 0
        self._aborting = False
        self._notices: list[list[str]] = []
        self._step = ""
        self._exclusive: dict[str, bool] = {}
        self._machine: steps.TurnMachine | None = None
        self._questions = Questions(QUESTION_WAIT)

    @workflow.signal
    def steer(self, text: str) -> None:
        """More input for this turn, read after the running tool calls (``TakeSteering``)."""
        self._steering.append(text)

    @workflow.signal
    def abort(self) -> None:
        """Stop the turn: the step under way is cancelled, its calls settled."""
        self._aborting = True
        self._questions.close_all()

    @workflow.query
    def progress(self) -> dict[str, Any]:
        """The step under way, the notices so far (``[level, text]``) and the questions waiting
        for the user (``crab_temporal.questions.Asked.public``)."""
        return {"step": self._step, "notices": list(self._notices), "questions": self._questions.waiting()}

    # --- questions: a worker's tool asks, the client shows, the user answers ---------------------

    @workflow.update
    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """From a ``crab.run_tool`` activity (``activity_id``): open a question (``kind``
        ``permission`` or ``question``, its redacted ``body``) about its call."""
        assert self._machine is not None
        asked = self._questions.ask(self._machine, request)
        return {"id": asked.id, "state": asked.state, "answer": asked.answer, "wait": self._questions.wait}

    @ask.validator
    def _may_ask(self, request: dict[str, Any]) -> None:
        if self._machine is None or self._aborting:
            raise Refused("the turn is not running tools")
        self._questions.check_ask(self._machine, request)

    @workflow.update
    def shown(self, question_id: str) -> None:
        """From the client: the question is on the user's screen now (an answer may come)."""
        self._questions.shown(question_id)

    @shown.validator
    def _may_show(self, question_id: str) -> None:
        self._questions.check_shown(question_id)

    @workflow.update
    def answer(self, question_id: str, answer: str | None) -> None:
        """From the client: the user's answer to a question it showed."""
        assert self._machine is not None
        self._questions.answer(self._machine, question_id, answer)

    @answer.validator
    def _may_answer(self, question_id: str, answer: str | None) -> None:
        self._questions.check_answer(question_id, answer)

    @workflow.update
    def give_up(self, question_id: str) -> dict[str, Any]:
        """From the asking worker (its wait ran out) or a client that cannot ask: the question
        ends unanswered, unless the user's answer came first."""
        assert self._machine is not None
        asked = self._questions.give_up(self._machine, question_id)
        return {"state": asked.state, "answer": asked.answer}

    @give_up.validator
    def _may_give_up(self, question_id: str) -> None:
        if self._machine is None or str(question_id) not in self._questions.asked:
            raise Refused(f"no question {question_id!r} in this turn")

    @workflow.query
    def asked(self, question_id: str) -> dict[str, Any]:
        """A question's ``state`` and ``answer`` (the asking worker polls it)."""
        found = self._questions.asked.get(question_id)
        return {"state": "unknown", "answer": None} if found is None else {"state": found.state, "answer": found.answer}

    @workflow.run
    async def run(self, turn: dict[str, Any]) -> dict[str, Any]:
        self.turn = turn
        session_id, turn_id = str(turn["session_id"]), str(turn["turn_id"])
        begun = await self._activity("crab.begin", turn_id, [session_id], self._short)
        history: list[crab.messages.Message] = [crab.messages.UserMessage("")] if begun["unanswered"] else []
        machine = steps.TurnMachine(
            session_id,
            turn_id,
            steps.Prompt(f"{turn_id}.p0", str(turn["prompt"])),
            history,
            steps.StepSettings(int(turn["max_iterations"])),
        )
        self._machine = machine
        self._questions = Questions(float(turn.get("question_wait", QUESTION_WAIT)), set(turn.get("always") or ()))
        step = machine.step
        while not isinstance(step, steps.EndTurn):
            self._step = step.id
            answer: steps.Input
            if self._aborting and not isinstance(step, steps.Settle):
                answer = steps.Abort("aborted")
            else:
                try:
                    answer = await self._carry_out(session_id, step)
                except Aborted:
                    answer = steps.Abort("aborted")
                except ActivityError as exc:
                    # A failed Settle has nothing more to do: the next turn's start pairs what is left.
                    answer = steps.Done() if isinstance(step, steps.Settle) else steps.Abort(_why(exc))
            step = machine.send(answer)
        return {
            "stop": step.stop,
            "error": step.error,
            "shown": step.shown,
            "text": machine.text,
            "tool_calls": machine.tool_calls,
            "turn_id": turn_id,
            "always": sorted(self._questions.always),
            "steered": self._taken,
        }

    # --- carrying out a step --------------------------------------------------------------------

    async def _carry_out(self, session_id: str, step: steps.Step) -> steps.Input:
        if isinstance(step, steps.CallModel):
            args = {"id": step.id, "iteration": step.iteration, "phase": step.phase, "final": step.final}
            answer = await self._activity("crab.call_model", step.id, [session_id, args], self._long)
            if answer["kind"] == "replied":
                self._exclusive.update(exclusive_calls(answer["message"]))
                reply = reply_from_wire(answer["message"])
                # The client shows every call from the stored reply (the store is the conversation),
                # so the machine asks for no ShowCalls: the steps, and their ids, stay as recorded.
                return steps.ModelReplied(reply, frozenset(call.id for call in reply.tool_calls))
            if answer["kind"] == "overflowed":
                return steps.Overflowed(reply_from_wire(answer["message"]))
            return steps.OverBudget()
        if isinstance(step, steps.RunTools):
            return await self._run_tools(session_id, step)
        if isinstance(step, steps.Record):
            args = {"id": step.id, "message": user_to_wire(step.message)}
            await self._activity("crab.carry_out", step.id, [session_id, "record", args], self._short)
            return steps.Done()
        if isinstance(step, steps.Submit):
            args = {"id": step.id, "prompt_id": step.prompt.id, "text": step.prompt.text, "steered": step.steered}
            got = await self._activity("crab.carry_out", step.id, [session_id, "submit", args], self._short)
            if got["refused"] is not None:
                return steps.Submitted(refused=str(got["refused"]))
            return steps.Submitted(
                None,
                tuple(user_from_wire(m) for m in got["context"]),  # type: ignore[misc]  # user messages
                str(got["today"]),
                tuple(user_from_wire(m) for m in got["history"]),
            )
        if isinstance(step, steps.ShowCalls):
            return steps.Done()  # the client shows the calls from the stored reply
        if isinstance(step, steps.Accept):
            return steps.Done()  # the input lives in this workflow's arguments and signals: nothing queued
        if isinstance(step, steps.TakeSteering):
            fresh, self._taken = self._steering[self._taken :], len(self._steering)
            first = self._taken - len(fresh)
            return steps.Steered(
                tuple(steps.Prompt(f"{self.turn['turn_id']}.s{first + n}", text) for n, text in enumerate(fresh))
            )
        if isinstance(step, steps.CheckEnd):
            args = {"id": step.id, "text": step.text[:4000], "continued": step.continued}
            got = await self._activity("crab.carry_out", step.id, [session_id, "check_end", args], self._short)
            return steps.Continued(got["text"])
        if isinstance(step, steps.Compact):
            args = {"id": step.id, "reason": step.reason}
            got = await self._activity("crab.carry_out", step.id, [session_id, "compact", args], self._long)
            return steps.Compacted(bool(got["done"]))
        if isinstance(step, steps.Notify):
            self._notices.append([step.level, step.text])
            return steps.Done()
        if isinstance(step, steps.Settle):
            calls = [call.id for call in step.tools.calls] if step.tools is not None else []
            await self._activity(
                "crab.settle", step.id, [session_id, step.id, step.why, calls, step.partial], self._short
            )
            return steps.Done()
        raise ApplicationError(f"no driver for {type(step).__name__}", non_retryable=True)

    async def _run_tools(self, session_id: str, step: steps.RunTools) -> steps.Input:
        """Each call its own activity, batched as the in-process tool runner batches them:
        consecutive calls run at once, a call of an ``exclusive`` tool alone; once an interceptor
        stopped the turn, or steering waits, the later batches are recorded as not run."""
        stopped: str | None = None
        ceiling = self.turn.get("ceiling")
        extra = [str(ceiling)] if ceiling is not None and workflow.patched(TURN_CEILING) else []
        for group in self._batches(step):
            skip = step.skip
            if skip is None and stopped is not None:
                skip = STOPPED_BEFORE.format(reason=stopped)
            elif skip is None and len(self._steering) > self._taken:
                skip = SKIPPED_FOR_STEERING
            ran = await asyncio.gather(
                *(
                    self._activity(
                        "crab.run_tool",
                        steps.result_id(step, call),
                        [session_id, step.id, call.id, skip, *extra],
                        self._tool,
                    )
                    for call in group
                ),
                return_exceptions=True,
            )
            for got in ran:  # every call of the batch has ended: now a failure or the abort goes on
                if isinstance(got, BaseException):
                    raise got
                stopped = stopped or got["stopped"]
        return steps.ToolsRan(stopped)

    def _batches(self, step: steps.RunTools) -> list[list[crab.messages.ToolCall]]:
        groups: list[list[crab.messages.ToolCall]] = []
        current: list[crab.messages.ToolCall] = []
        for call in step.calls:
            if self._exclusive.get(call.id, False):
                if current:
                    groups.append(current)
                    current = []
                groups.append([call])
            else:
                current.append(call)
        if current:
            groups.append(current)
        return groups

    # --- activities -----------------------------------------------------------------------------

    def _short(self) -> dict[str, Any]:
        return {
            "start_to_close_timeout": timedelta(minutes=2),
            "retry_policy": RetryPolicy(maximum_interval=timedelta(seconds=10), maximum_attempts=5),
        }

    def _long(self) -> dict[str, Any]:
        beat = float(self.turn["heartbeat"])
        return {
            "start_to_close_timeout": timedelta(minutes=15),
            "heartbeat_timeout": timedelta(seconds=beat * 3),
            "retry_policy": RetryPolicy(maximum_interval=timedelta(seconds=10), maximum_attempts=5),
        }

    def _tool(self) -> dict[str, Any]:
        beat = float(self.turn["heartbeat"])
        return {
            # the tool runner bounds the call by [crab] tool_timeout; this bounds the activity around
            # it and the questions it may wait for (the gate's and one of the tool's own)
            "start_to_close_timeout": timedelta(
                seconds=float(self.turn["tool_timeout"]) + 60 + 2 * self._questions.wait
            ),
            "heartbeat_timeout": timedelta(seconds=beat * 3),
            "retry_policy": RetryPolicy(maximum_interval=timedelta(seconds=10), maximum_attempts=5),
        }

    async def _activity(self, name: str, key: str, args: list[Any], options: Any) -> Any:
        """Run activity ``name`` for the step (or call) ``key``; ``Aborted`` when the abort signal
        came first (the activity is cancelled, and waited for: a tool's process is ended before the
        turn settles). The activity's id is its step's: a replay that asks for another step than
        the history holds fails, even where the activity's type is the same."""
        cancellation = workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED
        local = runs_locally(name, args) and self.turn.get("local_steps", True) and workflow.patched(LOCAL_STEPS)
        if local:  # no task round trip through the server (crab_temporal.placement says which and why)
            handle = workflow.start_local_activity(
                name, args=args, activity_id=f"{name}:{key}", cancellation_type=cancellation, **local_options(options())
            )
        else:
            handle = workflow.start_activity(
                name, args=args, activity_id=f"{name}:{key}", cancellation_type=cancellation, **options()
            )
        abortable = name != "crab.settle"  # settling is what an abort waits for
        await workflow.wait_condition(lambda: handle.done() or (abortable and self._aborting))
        if handle.done():
            return handle.result()
        handle.cancel()
        try:
            await handle
        except (ActivityError, asyncio.CancelledError):
            pass
        raise Aborted


def _why(exc: ActivityError) -> str:
    cause = exc.cause
    while isinstance(cause, ActivityError) and cause.cause is not None:
        cause = cause.cause
    return str(cause or exc) or type(cause or exc).__name__
