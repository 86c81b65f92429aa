"""The turn's decisions as a state machine that performs no I/O (sans-IO, like h11): given a session's
history, its input and settings it says what comes next (a ``Step``) and takes what carrying it out
gave (an ``Input``), so any driver (the in-process ``Turn``, a durable workflow engine) runs the
same turn (docs/architecture.md#a-turn-made-of-steps)."""

from __future__ import annotations

import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Literal

from crab._contracts.events import TurnStop
from crab._contracts.images import ImagePart
from crab._contracts.interception import PermissionRequest
from crab._contracts.messages import AssistantMessage, Message, ToolCall, UserMessage
from crab._contracts.questions import Question
from crab._loop.compaction import CompactionReason
from crab._values.history import NO_REPLY

DATE_NOTE = "[crab] Today is {date}."
"""Recorded after a prompt when the local date is not the one last told: the session's date (in
the system prompt, fixed for the session: ``session_date``) or an earlier note. The prompt never
shows today's date, which would change the whole cached prefix of a session continued next day."""
FINAL_ANSWER_NOTE = (
    "[crab] You have reached the limit of tool calls for this turn. Do not call tools; answer now "
    "with what you have found, and say what is left undone."
)
CAP_REACHED = "reached the cap of {limit} model calls; asking for a final answer"
CAP_SKIPPED = "Skipped: the iteration cap was reached."
REFUSED = "prompt refused: {reason}"
STOPPED_BY = "the turn was stopped: {reason}"


def session_date(session_id: str) -> str | None:
    """The date (UTC) a session started on, read from its id (``crab.storage.new_session_id``: UTC time
    first), so every process derives the same whatever its time zone (the date is in the system
    prompt, the prefix providers cache); None for an id of another form. Where the local date
    differs, the turn's date note says so (``date_note``)."""
    try:
        started = time.strptime(session_id[:15], "%Y%m%dT%H%M%S")
    except ValueError:
        return None
    return time.strftime("%Y-%m-%d", started)


def date_note(messages: Sequence[Message], date: str, started: str | None) -> str | None:
    """The note to record after a prompt when ``date`` is not the date last told: the last date
    note in ``messages``, else the session's date (``started``, in the system prompt)."""
    prefix = DATE_NOTE.partition("{")[0]
    told = started
    for message in reversed(messages):
        if isinstance(message, UserMessage) and message.content.startswith(prefix):
            told = message.content.removeprefix(prefix).rstrip(".")
            break
    return None if told == date else DATE_NOTE.format(date=date)


@dataclass(frozen=True, slots=True)
class Prompt:
    """One input for the model (the turn's own or a steering one), with the id a driver knows it by."""

    id: str
    text: str
    images: tuple[ImagePart, ...] = ()


# --- steps: what the machine asks a driver to do (each answered by one input) ----------------------


@dataclass(frozen=True, slots=True)
class Record:
    """Store ``message`` (a prompt, a hook's context, a note; never a model reply or a tool result,
    which ``CallModel`` and ``RunTools`` record). Answered by ``Done``."""

    id: str
    message: Message


@dataclass(frozen=True, slots=True)
class Submit:
    """Offer ``prompt`` to the ``crab_prompt_submit`` hooks. Answered by ``Submitted``."""

    id: str
    prompt: Prompt
    steered: bool = False


@dataclass(frozen=True, slots=True)
class Accept:
    """``prompt`` and what came with it are recorded: take it off its queue (an abort no longer
    loses it). Answered by ``Done``."""

    id: str
    prompt: Prompt
    steered: bool = False


@dataclass(frozen=True, slots=True)
class CallModel:
    """Build the next request from the session (its prefix unchanged: tools and system prompt as
    before, what varies recorded as messages), send it, record the reply.

    ``phase``: ``"first"`` checks the token budget first (``OverBudget`` instead of a call when it
    is past its threshold); ``"compacted"`` builds the request again after a compaction; ``"held"``
    sends the request built last, held within the budget, as no compaction was possible; ``"retry"``
    is the one retry after a context overflow (no overflow is held back then). ``final`` is the call
    after the iteration cap. Answered by ``ModelReplied`` or (not in ``"retry"``) ``Overflowed``."""

    id: str
    iteration: int
    phase: Literal["first", "compacted", "held", "retry"] = "first"
    final: bool = False


@dataclass(frozen=True, slots=True)
class Compact:
    """Compact the session (``"threshold"``: the budget said so; ``"overflow"``: the provider did).
    A failed overflow compaction shows the provider's held error. Answered by ``Compacted``."""

    id: str
    reason: CompactionReason


@dataclass(frozen=True, slots=True)
class CheckEnd:
    """The model answered: ask ``crab_turn_end`` whether the turn goes on. Answered by ``Continued``."""

    id: str
    text: str
    continued: int


@dataclass(frozen=True, slots=True)
class ShowCalls:
    """Show the user each of ``calls`` (a ``ToolCallEvent``): the calls of a reply the model's
    stream did not show as they came, so every call is shown before it runs and before any
    question about it. Answered by ``Done``."""

    id: str
    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class RunTools:
    """Run ``calls`` (or, with ``skip``, record that error as each one's result instead); every
    call gets exactly one result, recorded under the id ``result_id(self, call)``. Answered by
    ``ToolsRan``."""

    id: str
    calls: tuple[ToolCall, ...]
    skip: str | None = None


@dataclass(frozen=True, slots=True)
class Ask:
    """Ask the user about ``call`` of the ``RunTools`` under way: a permission
    (``PermissionRequest``) or a tool's ``Question``. The only step that comes while another is
    being carried out: a call asks from inside ``RunTools`` (``TurnMachine.ask``), calls side by
    side ask side by side, and only about a call already shown. Answered by ``Answered``
    (``TurnMachine.answer``)."""

    id: str
    call: ToolCall
    question: PermissionRequest | Question


@dataclass(frozen=True, slots=True)
class TakeSteering:
    """Say which steering inputs are queued now. Answered by ``Steered`` (empty: none)."""

    id: str


@dataclass(frozen=True, slots=True)
class Notify:
    """Tell the user ``text`` (a notice, not recorded). Answered by ``Done``."""

    id: str
    text: str
    level: Literal["info", "warning"] = "info"


@dataclass(frozen=True, slots=True)
class Settle:
    """After an abort or a failure: record what ``CallModel`` had streamed (``partial``) as a reply
    that never reaches a provider again, and a stand-in result for each call of ``tools`` (the
    ``RunTools`` under way; with ``partial``, of the reply the driver already recorded, if the abort
    came before ``ModelReplied``) that has none yet (``result_id`` says which). Answered by ``Done``."""

    id: str
    why: str
    tools: RunTools | None = None
    partial: bool = False


@dataclass(frozen=True, slots=True)
class EndTurn:
    """The turn is over. ``shown``: the driver shows ``error`` (a refused prompt); others were shown
    where they happened. The last step; the machine takes no input after it."""

    id: str
    stop: TurnStop
    error: str | None = None
    shown: bool = False


Step = (
    Record
    | Submit
    | Accept
    | CallModel
    | Compact
    | CheckEnd
    | ShowCalls
    | RunTools
    | Ask
    | TakeSteering
    | Notify
    | Settle
    | EndTurn
)


def result_id(step: RunTools, call: ToolCall) -> str:
    """The id a call's result is recorded under: the step's and the call's, so a step carried out
    twice records each result once."""
    return f"{step.id}/{call.id}"


# --- inputs: what carrying out a step gave ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Done:
    """A step with nothing to report was carried out."""


@dataclass(frozen=True, slots=True)
class Submitted:
    """The ``crab_prompt_submit`` hooks' answer: a refusal, or the context to record after the
    prompt; ``today`` is the local date (a date note follows when it is not the one last told)
    and ``history`` the session's context as it stands."""

    refused: str | None = None
    context: tuple[UserMessage, ...] = ()
    today: str = ""
    history: Sequence[Message] = ()


@dataclass(frozen=True, slots=True)
class ModelReplied:
    """The recorded reply (``stop_reason="error"`` when the call failed) and the ids of its calls
    the stream showed as they came (the others get a ``ShowCalls``)."""

    message: AssistantMessage
    shown: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class OverBudget:
    """The request built is past the budget's threshold; nothing was sent."""


@dataclass(frozen=True, slots=True)
class Overflowed:
    """The provider said the request did not fit; ``message`` is the failed reply (recorded)."""

    message: AssistantMessage


@dataclass(frozen=True, slots=True)
class Compacted:
    """Whether the compaction happened."""

    done: bool


@dataclass(frozen=True, slots=True)
class Continued:
    """A ``crab_turn_end`` hook's text to go on with, or None: the turn ends."""

    text: str | None = None


@dataclass(frozen=True, slots=True)
class ToolsRan:
    """Every call has its result; ``stopped`` is why an interceptor ended the turn, if one did."""

    stopped: str | None = None


@dataclass(frozen=True, slots=True)
class Answered:
    """The user's answer to an ``Ask`` (a permission's ``"once"``, ``"always"`` or ``"deny"``, a
    question's words), None for no answer."""

    answer: str | None = None


@dataclass(frozen=True, slots=True)
class Steered:
    """The steering inputs queued now, oldest first."""

    prompts: tuple[Prompt, ...] = ()


@dataclass(frozen=True, slots=True)
class Abort:
    """The turn is aborted (``"aborted"``) or failed (any other reason): settle and end."""

    why: str


Input = Done | Submitted | ModelReplied | OverBudget | Overflowed | Compacted | Continued | ToolsRan | Steered | Abort


class StepError(Exception):
    """A driver answered a step with an input it does not take (a bug in the driver)."""


@dataclass(frozen=True, slots=True)
class StepSettings:
    """The settings the machine decides with."""

    max_iterations: int = 25


class TurnMachine:
    """One turn of one session as steps; ``step`` is the current one (the same object, id and all,
    until ``send`` answers it), ``send`` answers it and returns the next.

    Step ids are ``"{turn_id}.{n}"``: a driver that gives the same turn id (a durable engine replaying
    its history) gets the same ids, so carrying a step out again records nothing twice.
    """

    def __init__(
        self,
        session_id: str,
        turn_id: str,
        prompt: Prompt,
        history: Sequence[Message],
        settings: StepSettings | None = None,
        *,
        may_answer_for_others: bool = True,
    ) -> None:
        self.session_id = session_id
        self.turn_id = turn_id
        self.settings = settings or StepSettings()
        self.text = ""
        """The last replayable reply's text: the turn's answer."""
        self.tool_calls = 0
        """Calls the model made that were run (not those skipped at the cap)."""
        self.continued = 0
        """Times a ``crab_turn_end`` hook kept this turn going."""
        self._count = 0
        self._ended = False
        self._shown: frozenset[str] = frozenset()  # ids of the last reply's calls the user has seen
        self._asked: dict[str, int] = {}  # call id -> questions asked about it in this RunTools
        self._open: set[str] = set()  # ids of the Ask steps not answered yet
        self._calls: tuple[ToolCall, ...] = ()  # the calls of the reply being shown or run
        # A prompt left without a reply gets the recorded stand-in reply, unless another process may
        # still be answering it (``may_answer_for_others`` False: it was found while a turn ran).
        unanswered = may_answer_for_others and bool(history) and isinstance(history[-1], UserMessage)
        self._script = self._turn(prompt, unanswered)
        self.step: Step = next(self._script)

    def send(self, answer: Input) -> Step:
        """Answer the current step; returns the next one. ``Abort`` is taken at any step."""
        if self._ended:
            raise StepError(f"the turn has ended; {type(answer).__name__} came after {self.step.id}")
        if isinstance(answer, Abort):
            self._open.clear()  # the questions under way go unanswered: their calls are settled
            self._script.close()
            self._script = self._after_settle(self._settle(answer.why))
            self.step = next(self._script)
            return self.step
        try:
            self.step = self._script.send(answer)
        except StopIteration:  # pragma: no cover - every script ends with EndTurn
            raise StepError("the turn's steps ran out without an EndTurn") from None
        self._ended = isinstance(self.step, EndTurn)
        return self.step

    def ask(self, call_id: str, question: PermissionRequest | Question) -> Ask:
        """The ``Ask`` step for a question a call of the current ``RunTools`` puts to the user;
        ``StepError`` for a call that is not being run or was not shown: nobody is asked about a
        call before they have seen it. Its id is the call's result id and a count, the same when
        the step is carried out again."""
        step = self.step
        call = next((c for c in step.calls if c.id == call_id), None) if isinstance(step, RunTools) else None
        if call is None or not isinstance(step, RunTools) or step.skip is not None:
            raise StepError(f"a question about call {call_id!r} while {type(step).__name__} {step.id} is the step")
        if call_id not in self._shown:  # pragma: no cover - RunTools comes after its ShowCalls
            raise StepError(f"a question about call {call_id!r}, which the user has not been shown")
        self._asked[call_id] = count = self._asked.get(call_id, 0) + 1
        asked = Ask(f"{result_id(step, call)}/ask{count}", call, question)
        self._open.add(asked.id)
        return asked

    def answer(self, step: Ask, answer: Answered) -> None:
        """Take the answer to ``step``; ``StepError`` for one that is not open (answered already,
        or its turn was aborted and settled)."""
        if step.id not in self._open:
            raise StepError(f"Ask {step.id} is not waiting for an answer")
        self._open.discard(step.id)

    def _id(self) -> str:
        self._count += 1
        return f"{self.turn_id}.{self._count}"

    def _settle(self, why: str) -> Settle:
        step = self.step
        tools = step if isinstance(step, RunTools) else None
        if isinstance(step, ShowCalls):  # the reply is recorded, its calls not run yet
            tools = RunTools(step.id, self._calls)
        return Settle(self._id(), why, tools, partial=isinstance(step, CallModel))

    def _after_settle(self, settle: Settle) -> Generator[Step, Input, None]:
        yield from self._expect(settle, Done)
        yield EndTurn(self._id(), "aborted" if settle.why == "aborted" else "error")

    def _expect(self, step: Step, *kinds: type) -> Generator[Step, Input, Input]:
        answer = yield step
        if not isinstance(answer, kinds):
            names = " or ".join(kind.__name__ for kind in kinds)
            raise StepError(f"{type(step).__name__} {step.id} takes {names}, not {type(answer).__name__}")
        return answer

    # --- the script ------------------------------------------------------------------------------

    def _turn(self, prompt: Prompt, unanswered: bool) -> Generator[Step, Input, None]:
        if unanswered:  # the last turn got no reply: roles alternate, and a resume reads the same
            yield from self._expect(Record(self._id(), AssistantMessage(content=NO_REPLY)), Done)
        refused = yield from self._submit(prompt, steered=False)
        if refused is not None:
            yield EndTurn(self._id(), "error", refused, shown=True)
            return
        limit = self.settings.max_iterations
        iteration = 0
        while iteration < limit:
            iteration += 1
            message = yield from self._call_model(iteration, final=False)
            if message.stop_reason == "error":
                yield EndTurn(self._id(), "error", message.error)
                return
            if not message.tool_calls:
                going_on = yield from self._expect(CheckEnd(self._id(), self.text, self.continued), Continued)
                assert isinstance(going_on, Continued)
                if going_on.text is None:
                    yield EndTurn(self._id(), "end")
                    return
                self.continued += 1
                yield from self._expect(Record(self._id(), UserMessage(going_on.text)), Done)
                continue
            self.tool_calls += len(message.tool_calls)
            ran = yield from self._run_tools(message.tool_calls, None)
            assert isinstance(ran, ToolsRan)
            if ran.stopped is not None:
                yield from self._expect(Notify(self._id(), STOPPED_BY.format(reason=ran.stopped), "warning"), Done)
                yield EndTurn(self._id(), "guard", ran.stopped)
                return
            yield from self._take_steering()
        yield from self._expect(Notify(self._id(), CAP_REACHED.format(limit=limit), "warning"), Done)
        # Asked as a recorded note with the same tools and system prompt: the request's prefix
        # stays the cached one (tools are offered, and a call made anyway is paired as skipped).
        yield from self._expect(Record(self._id(), UserMessage(FINAL_ANSWER_NOTE)), Done)
        message = yield from self._call_model(iteration + 1, final=True)
        if message.stop_reason == "error":
            yield EndTurn(self._id(), "error", message.error)
            return
        if message.tool_calls:
            yield from self._run_tools(message.tool_calls, CAP_SKIPPED)
        yield EndTurn(self._id(), "max_iterations")

    def _run_tools(self, calls: tuple[ToolCall, ...], skip: str | None) -> Generator[Step, Input, ToolsRan]:
        """Show the calls the stream did not, then run them (questions come as ``Ask`` meanwhile)."""
        self._calls = calls
        unseen = tuple(call for call in calls if call.id not in self._shown)
        if unseen:
            yield from self._expect(ShowCalls(self._id(), unseen), Done)
            self._shown |= {call.id for call in unseen}
        self._asked = {}
        ran = yield from self._expect(RunTools(self._id(), calls, skip), ToolsRan)
        assert isinstance(ran, ToolsRan)
        return ran

    def _submit(self, prompt: Prompt, *, steered: bool) -> Generator[Step, Input, str | None]:
        """Offer ``prompt`` to the hooks and record it with its context; the refusal line, if any."""
        answer = yield from self._expect(Submit(self._id(), prompt, steered), Submitted)
        assert isinstance(answer, Submitted)
        if answer.refused is not None:
            return REFUSED.format(reason=answer.refused)
        recorded: list[Message] = [UserMessage(prompt.text, images=prompt.images), *answer.context]
        for message in recorded:
            yield from self._expect(Record(self._id(), message), Done)
        note = date_note([*answer.history, *recorded], answer.today, session_date(self.session_id))
        if note is not None:
            yield from self._expect(Record(self._id(), UserMessage(note)), Done)
        yield from self._expect(Accept(self._id(), prompt, steered), Done)
        return None

    def _take_steering(self) -> Generator[Step, Input, None]:
        """Record every queued steering input, asking again until none is left."""
        while True:
            answer = yield from self._expect(TakeSteering(self._id()), Steered)
            assert isinstance(answer, Steered)
            if not answer.prompts:
                return
            for prompt in answer.prompts:
                refused = yield from self._submit(prompt, steered=True)
                if refused is not None:
                    yield from self._expect(Notify(self._id(), refused, "warning"), Done)

    def _call_model(self, iteration: int, *, final: bool) -> Generator[Step, Input, AssistantMessage]:
        """One model call: compacted first past the budget's threshold; compacted and retried
        once when the provider says the request did not fit."""
        answer = yield from self._expect(
            CallModel(self._id(), iteration, "first", final), ModelReplied, OverBudget, Overflowed
        )
        if isinstance(answer, OverBudget):
            compacted = yield from self._expect(Compact(self._id(), "threshold"), Compacted)
            assert isinstance(compacted, Compacted)
            phase: Literal["compacted", "held"] = "compacted" if compacted.done else "held"
            answer = yield from self._expect(CallModel(self._id(), iteration, phase, final), ModelReplied, Overflowed)
        if isinstance(answer, Overflowed):
            compacted = yield from self._expect(Compact(self._id(), "overflow"), Compacted)
            assert isinstance(compacted, Compacted)
            if compacted.done:
                answer = yield from self._expect(CallModel(self._id(), iteration, "retry", final), ModelReplied)
            else:
                answer = ModelReplied(answer.message)
        assert isinstance(answer, ModelReplied)
        self._shown = answer.shown
        if answer.message.replayable:
            self.text = answer.message.content
        return answer.message
