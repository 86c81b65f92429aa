"""The turn's state machine (``crab._loop.steps``) driven directly: sequences of inputs give the steps
a driver carries out, with no asyncio and no store."""

from __future__ import annotations

import pytest
from crab._contracts.interception import PermissionRequest
from crab._contracts.messages import AssistantMessage, ToolCall, UserMessage
from crab._loop.steps import (
    CAP_SKIPPED,
    DATE_NOTE,
    FINAL_ANSWER_NOTE,
    Abort,
    Accept,
    Answered,
    Ask,
    CallModel,
    CheckEnd,
    Compact,
    Compacted,
    Continued,
    Done,
    EndTurn,
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
    StepError,
    StepSettings,
    Submit,
    Submitted,
    TakeSteering,
    ToolsRan,
    TurnMachine,
    result_id,
    session_date,
)
from crab._values.history import NO_REPLY

SESSION = "20260301T120000-abcdef"
REQUEST = PermissionRequest("save", "write", "save text=a", call_id="c1")
DAY = session_date(SESSION) or ""


def machine(history: tuple = (), max_iterations: int = 25, text: str = "hi") -> TurnMachine:
    return TurnMachine(SESSION, "t1", Prompt("p0", text), list(history), StepSettings(max_iterations))


def submit(m: TurnMachine, history: tuple = (), context: tuple = ()) -> None:
    """Answer the Submit and the records of the prompt up to its Accept."""
    assert isinstance(m.step, Submit)
    step = m.send(Submitted(None, context, DAY, list(history)))
    while isinstance(step, Record):
        step = m.send(Done())
    assert isinstance(step, Accept)
    m.send(Done())


def reply(text: str = "", *calls: ToolCall, error: str | None = None, shown: bool = True) -> ModelReplied:
    """A reply whose calls the stream showed (``shown``) or did not."""
    stop = "error" if error else ("tool_use" if calls else "end_turn")
    seen = frozenset(c.id for c in calls) if shown else frozenset()
    return ModelReplied(AssistantMessage(text, tool_calls=calls, stop_reason=stop, error=error), seen)


def call(n: int) -> ToolCall:
    return ToolCall(f"c{n}", "read", {"path": f"f{n}"})


def test_a_prompt_answered_at_once_records_it_calls_the_model_and_ends() -> None:
    m = machine()
    first = m.step
    assert isinstance(first, Submit) and first.prompt.text == "hi" and not first.steered
    record = m.send(Submitted(None, (UserMessage("ctx"),), DAY, []))
    assert isinstance(record, Record) and record.message == UserMessage("hi")
    second = m.send(Done())
    assert isinstance(second, Record) and second.message == UserMessage("ctx")
    assert isinstance(m.send(Done()), Accept)
    step = m.send(Done())
    assert isinstance(step, CallModel) and step.phase == "first" and step.iteration == 1 and not step.final
    check = m.send(reply("hello"))
    assert isinstance(check, CheckEnd) and check.text == "hello" and check.continued == 0
    end = m.send(Continued(None))
    assert isinstance(end, EndTurn) and end.stop == "end" and end.error is None
    assert m.text == "hello" and m.tool_calls == 0


def test_step_ids_are_stable_unique_and_derived_from_the_turn() -> None:
    """The same inputs give the same ids (a driver replaying a turn gets the steps it recorded);
    the current step is the same object until answered."""
    runs = []
    for _ in range(2):
        m = machine()
        ids = [m.step.id]
        assert m.step is m.step
        submit(m)
        ids.append(m.step.id)
        m.send(reply("", call(1)))
        ids.append(m.step.id)
        runs.append(ids)
    assert runs[0] == runs[1]
    assert len(set(runs[0])) == 3 and all(i.startswith("t1.") for i in runs[0])


def test_an_unanswered_last_prompt_gets_no_reply_recorded_first() -> None:
    m = machine(history=(UserMessage("earlier"),))
    assert isinstance(m.step, Record) and m.step.message == AssistantMessage(content=NO_REPLY)
    assert isinstance(m.send(Done()), Submit)
    answered = machine(history=(UserMessage("earlier"), AssistantMessage("ok")))
    assert isinstance(answered.step, Submit)


def test_a_prompt_another_process_may_still_answer_gets_no_stand_in_reply() -> None:
    """A resume that found a turn of the session running elsewhere (``Session.shared``): the
    prompt it ended on is that turn's, still being answered there."""
    m = TurnMachine(
        SESSION, "t1", Prompt("p0", "hi"), [UserMessage("theirs")], StepSettings(), may_answer_for_others=False
    )
    assert isinstance(m.step, Submit)


def test_a_refused_prompt_ends_the_turn_with_the_error_shown_and_records_nothing() -> None:
    m = machine()
    end = m.send(Submitted("no secrets here"))
    assert isinstance(end, EndTurn) and end.stop == "error" and end.shown
    assert end.error == "prompt refused: no secrets here"
    with pytest.raises(StepError):
        m.send(Done())


def test_a_date_note_follows_the_prompt_when_the_day_changed() -> None:
    m = machine()
    step = m.send(Submitted(None, (), "2099-01-01", []))
    assert isinstance(step, Record) and step.message == UserMessage("hi")
    note = m.send(Done())
    assert isinstance(note, Record) and note.message == UserMessage(DATE_NOTE.format(date="2099-01-01"))
    earlier = [UserMessage(DATE_NOTE.format(date="2099-01-01")), AssistantMessage("ok")]
    told = machine(history=tuple(earlier))
    told.send(Submitted(None, (), "2099-01-01", earlier))
    assert isinstance(told.send(Done()), Accept)  # told already: no second note


def test_tool_calls_run_then_steering_is_taken_then_the_model_is_called_again() -> None:
    m = machine()
    submit(m)
    run = m.send(reply("", call(1), call(2)))
    assert isinstance(run, RunTools) and run.calls == (call(1), call(2)) and run.skip is None
    assert result_id(run, call(1)) != result_id(run, call(2))
    poll = m.send(ToolsRan())
    assert isinstance(poll, TakeSteering)
    offered = m.send(Steered((Prompt("p1", "also this"),)))
    assert isinstance(offered, Submit) and offered.steered and offered.prompt.text == "also this"
    record = m.send(Submitted(None, (), DAY, []))
    assert isinstance(record, Record) and record.message == UserMessage("also this")
    accept = m.send(Done())
    assert isinstance(accept, Accept) and accept.steered
    assert isinstance(m.send(Done()), TakeSteering)  # the queue is read again until it is empty
    again = m.send(Steered(()))
    assert isinstance(again, CallModel) and again.iteration == 2
    assert m.tool_calls == 2


def test_a_refused_steering_input_is_a_warning_and_the_turn_goes_on() -> None:
    m = machine()
    submit(m)
    m.send(reply("", call(1)))
    m.send(ToolsRan())
    m.send(Steered((Prompt("p1", "bad"),)))
    notice = m.send(Submitted("not allowed"))
    assert isinstance(notice, Notify) and notice.level == "warning" and "not allowed" in notice.text
    assert isinstance(m.send(Done()), TakeSteering)


def test_an_interceptor_that_stops_the_turn_ends_it_as_guard() -> None:
    m = machine()
    submit(m)
    m.send(reply("", call(1)))
    notice = m.send(ToolsRan(stopped="loop detected"))
    assert isinstance(notice, Notify) and notice.text == "the turn was stopped: loop detected"
    end = m.send(Done())
    assert isinstance(end, EndTurn) and end.stop == "guard" and end.error == "loop detected"


def test_a_failed_reply_ends_the_turn_with_its_error() -> None:
    m = machine()
    submit(m)
    end = m.send(reply(error="rate limited"))
    assert isinstance(end, EndTurn) and end.stop == "error" and end.error == "rate limited" and not end.shown


def test_a_turn_end_hook_keeps_the_turn_going_and_counts_an_iteration() -> None:
    m = machine(max_iterations=2)
    submit(m)
    m.send(reply("first"))
    record = m.send(Continued("check the tests"))
    assert isinstance(record, Record) and record.message == UserMessage("check the tests")
    step = m.send(Done())
    assert isinstance(step, CallModel) and step.iteration == 2
    check = m.send(reply("second"))
    assert isinstance(check, CheckEnd) and check.continued == 1


def test_the_iteration_cap_asks_for_a_final_answer_and_skips_its_calls() -> None:
    m = machine(max_iterations=1)
    submit(m)
    m.send(reply("", call(1)))
    m.send(ToolsRan())
    notice = m.send(Steered(()))
    assert isinstance(notice, Notify) and "cap of 1 model calls" in notice.text
    note = m.send(Done())
    assert isinstance(note, Record) and note.message == UserMessage(FINAL_ANSWER_NOTE)
    final = m.send(Done())
    assert isinstance(final, CallModel) and final.final
    skipped = m.send(reply("", call(2)))
    assert isinstance(skipped, RunTools) and skipped.skip == CAP_SKIPPED and skipped.calls == (call(2),)
    end = m.send(ToolsRan())
    assert isinstance(end, EndTurn) and end.stop == "max_iterations"
    assert m.tool_calls == 1  # the skipped call never ran


def test_past_the_budget_the_session_is_compacted_before_the_call() -> None:
    m = machine()
    submit(m)
    compact = m.send(OverBudget())
    assert isinstance(compact, Compact) and compact.reason == "threshold"
    after = m.send(Compacted(True))
    assert isinstance(after, CallModel) and after.phase == "compacted" and after.iteration == 1
    m2 = machine()
    submit(m2)
    m2.send(OverBudget())
    held = m2.send(Compacted(False))
    assert isinstance(held, CallModel) and held.phase == "held"


def test_an_overflow_is_compacted_and_retried_once_or_ends_the_turn() -> None:
    failed = AssistantMessage("", stop_reason="error", error="context too long")
    m = machine()
    submit(m)
    compact = m.send(Overflowed(failed))
    assert isinstance(compact, Compact) and compact.reason == "overflow"
    retry = m.send(Compacted(True))
    assert isinstance(retry, CallModel) and retry.phase == "retry"
    with pytest.raises(StepError):  # a retry holds no overflow back
        m.send(Overflowed(failed))
    m2 = machine()
    submit(m2)
    m2.send(Overflowed(failed))
    end = m2.send(Compacted(False))
    assert isinstance(end, EndTurn) and end.stop == "error" and end.error == "context too long"


def test_an_abort_while_tools_run_settles_those_calls_and_ends_aborted() -> None:
    m = machine()
    submit(m)
    run = m.send(reply("", call(1), call(2)))
    settle = m.send(Abort("aborted"))
    assert isinstance(settle, Settle) and settle.tools == run and not settle.partial
    end = m.send(Done())
    assert isinstance(end, EndTurn) and end.stop == "aborted"


def test_an_abort_during_a_model_call_settles_its_partial_reply() -> None:
    m = machine()
    submit(m)
    settle = m.send(Abort("boom"))
    assert isinstance(settle, Settle) and settle.partial and settle.tools is None
    end = m.send(Done())
    assert isinstance(end, EndTurn) and end.stop == "error"


def test_a_wrong_input_is_a_driver_bug() -> None:
    m = machine()
    with pytest.raises(StepError, match=r"Submit .* takes Submitted, not ToolsRan"):
        m.send(ToolsRan())


def test_an_abort_before_anything_ran_settles_nothing_and_the_ended_turn_takes_no_abort() -> None:
    m = machine()
    settle = m.send(Abort("aborted"))
    assert isinstance(settle, Settle) and settle.tools is None and not settle.partial
    assert isinstance(m.send(Done()), EndTurn)
    with pytest.raises(StepError):
        m.send(Abort("aborted"))


# --- questions: every call is shown before it runs and before anyone is asked about it -------------


def test_calls_the_stream_did_not_show_are_shown_before_they_run() -> None:
    m = machine()
    submit(m)
    shown = m.send(
        ModelReplied(AssistantMessage("", tool_calls=(call(1), call(2)), stop_reason="tool_use"), frozenset({"c1"}))
    )
    assert isinstance(shown, ShowCalls) and shown.calls == (call(2),)
    run = m.send(Done())
    assert isinstance(run, RunTools) and run.calls == (call(1), call(2))


def test_a_question_is_a_step_about_a_call_of_the_running_tools() -> None:
    m = machine()
    submit(m)
    m.send(reply("", call(1), shown=False))
    run = m.send(Done())
    assert isinstance(run, RunTools)
    asked = m.ask("c1", REQUEST)
    again = m.ask("c1", REQUEST)
    assert isinstance(asked, Ask) and asked.call == call(1) and asked.question == REQUEST
    assert asked.id == f"{result_id(run, call(1))}/ask1" and again.id.endswith("/ask2")
    m.answer(asked, Answered("once"))
    with pytest.raises(StepError):
        m.answer(asked, Answered("once"))  # answered already
    m.answer(again, Answered("deny"))
    assert m.step is run  # questions come and go while the RunTools is carried out


def test_nobody_is_asked_about_a_call_that_is_not_being_run() -> None:
    m = machine()
    submit(m)
    assert isinstance(m.step, CallModel)
    with pytest.raises(StepError):
        m.ask("c1", REQUEST)  # the reply is not even in
    shown = m.send(reply("", call(1), shown=False))
    assert isinstance(shown, ShowCalls)
    with pytest.raises(StepError):
        m.ask("c1", REQUEST)  # not shown yet
    m.send(Done())
    with pytest.raises(StepError):
        m.ask("c9", REQUEST)  # not a call of this reply


def test_an_abort_while_calls_are_shown_pairs_every_call_of_the_reply() -> None:
    m = machine()
    submit(m)
    m.send(reply("", call(1), call(2), shown=False))
    settle = m.send(Abort("aborted"))
    assert isinstance(settle, Settle) and settle.tools is not None and settle.tools.calls == (call(1), call(2))


def test_an_abort_leaves_no_question_open() -> None:
    m = machine()
    submit(m)
    m.send(reply("", call(1)))
    asked = m.ask("c1", REQUEST)
    m.send(Abort("aborted"))
    with pytest.raises(StepError):
        m.answer(asked, Answered("once"))
