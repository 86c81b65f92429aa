"""crab-ask's ``ask_user`` in scripted turns: answered through the agent's question, through a
program's callback (``crab.Agent(question=...)``), and told at once when nobody can answer."""

from __future__ import annotations

import time

import crab
import pytest
from crab.testing import ScriptedProvider

import crab_ask
from crab_ask.asking import NO_ANSWER, NOBODY, checked


def ask_call(**args):
    return [{"tool": "ask_user", "args": args}]


def test_a_choice_picked_by_number_comes_back_as_its_text(crab_agent):
    asked: list[crab.Question] = []

    async def question(q: crab.Question) -> str | None:
        asked.append(q)
        return "2"

    harness = crab_agent(
        [ask_call(question="Which database?", choices=["SQLite", "PostgreSQL"]), [{"text": "ok"}]],
        plugins={"ask": crab_ask},
        question=question,
    )
    assert harness.run("set it up").text == "ok"
    assert asked == [crab.Question("Which database?", ("SQLite", "PostgreSQL"), True)]
    [result] = harness.events_of(crab.events.ToolResultEvent)
    assert (result.content, result.is_error) == ("The user chose: PostgreSQL", False)
    assert harness.requests[-1].messages[-1].content == "The user chose: PostgreSQL"


def test_free_words_answer_unless_the_choices_are_closed(crab_agent):
    answers = iter(["MariaDB", "use SQLite"])

    async def question(q: crab.Question) -> str | None:
        return next(answers)

    harness = crab_agent(
        [
            ask_call(question="Which database?", choices=["SQLite", "PostgreSQL"], allow_other=False),
            ask_call(question="Anything else?"),
            [{"text": "ok"}],
        ],
        plugins={"ask": crab_ask},
        question=question,
    )
    harness.run("go")
    closed, open_ = harness.events_of(crab.events.ToolResultEvent)
    assert (closed.content, closed.is_error) == (NO_ANSWER, True)  # a word outside closed choices is none
    assert open_.content == "The user answered: use SQLite"


def test_nobody_to_ask_is_said_at_once(crab_agent):
    harness = crab_agent([ask_call(question="Proceed?"), [{"text": "went on"}]], plugins={"ask": crab_ask})
    started = time.monotonic()
    assert harness.run("go").text == "went on"
    assert time.monotonic() - started < 10  # never a wait for an answer that cannot come
    [result] = harness.events_of(crab.events.ToolResultEvent)
    assert (result.content, result.is_error) == (NOBODY, True)


def test_no_answer_in_time_is_no_answer(crab_agent):
    import asyncio

    async def never(q: crab.Question) -> str | None:
        await asyncio.sleep(3600)
        return "late"

    harness = crab_agent(
        [ask_call(question="Proceed?"), [{"text": "done"}]],
        plugins={"ask": crab_ask},
        question=never,
        config={"plugins.ask.timeout": 5},
    )
    harness.run("go")
    [result] = harness.events_of(crab.events.ToolResultEvent)
    assert result.is_error and result.content.startswith("The user did not answer within 5 s.")


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"question": "  "}, "non-empty question"),
        ({"question": "x" * 2001}, "at most 2000"),
        ({"question": "q", "choices": [str(n) for n in range(11)]}, "at most 10"),
        ({"question": "q", "choices": ["a", "A"]}, "there twice"),
        ({"question": "q", "choices": ["only"], "allow_other": False}, "no question"),
    ],
)
def test_bad_questions_are_refused_with_what_to_fix(args, problem):
    with pytest.raises(crab.ToolError, match=problem):
        checked(args)


def test_the_library_callback_answers_sync_or_async(tmp_path):
    seen: list[crab.Question] = []

    def sync_answer(q: crab.Question) -> str:
        seen.append(q)
        return "SQLite"

    replies = [ask_call(question="Which one?", choices=["SQLite", "PostgreSQL"]), [{"text": "noted"}]]
    with crab.Agent(
        provider=ScriptedProvider(replies),
        model="scripted",
        plugins=[],
        plugin_objects={"ask": crab_ask},
        workspace=tmp_path,
        user_config=False,
        project_config=False,
        environment=False,
        question=sync_answer,
    ) as agent:
        result = agent.run_sync("choose")
    assert result.text == "noted"
    [call] = result.tool_calls
    assert (call.name, call.result, call.is_error) == ("ask_user", "The user chose: SQLite", False)
    assert seen[0].choices == ("SQLite", "PostgreSQL")


def test_a_library_without_a_callback_cannot_be_asked(tmp_path):
    replies = [ask_call(question="Which one?"), [{"text": "assumed"}]]
    with crab.Agent(
        provider=ScriptedProvider(replies),
        model="scripted",
        plugins=[],
        plugin_objects={"ask": crab_ask},
        workspace=tmp_path,
        user_config=False,
        project_config=False,
        environment=False,
    ) as agent:
        result = agent.run_sync("choose")
    [call] = result.tool_calls
    assert (call.result, call.is_error) == (NOBODY, True)


def test_a_callback_that_raises_is_no_answer_naming_it(tmp_path):
    def broken(q: crab.Question) -> str:
        raise RuntimeError("boom")

    replies = [ask_call(question="Which one?"), [{"text": "ok"}]]
    with crab.Agent(
        provider=ScriptedProvider(replies),
        model="scripted",
        plugins=[],
        plugin_objects={"ask": crab_ask},
        workspace=tmp_path,
        user_config=False,
        project_config=False,
        environment=False,
        question=broken,
    ) as agent:
        result = agent.run_sync("choose")
    [call] = result.tool_calls
    assert call.is_error and "question callback raised RuntimeError: boom" in (call.result or "")
