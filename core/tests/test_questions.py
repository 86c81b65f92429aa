"""A tool's question to the user (``crab.Question``): the one answer rule, masking before it is
shown, and the plain terminal's asker (guarded like the permission question)."""

from __future__ import annotations

import asyncio
import io
import os
import threading

import crab
from crab._cli.question import ask_question_blocking, user_question_lines
from crab._contracts.questions import ANSWER_LIMIT
from crab._values.redacted import redacted_question

CLOSED = crab.Question("Which database?", ("SQLite", "PostgreSQL"), free_text=False)
OPEN = crab.Question("Which database?", ("SQLite", "PostgreSQL"))


def test_a_number_or_a_choices_text_picks_it_and_words_answer_only_when_allowed() -> None:
    assert CLOSED.answer_for(" 2 ") == "PostgreSQL"
    assert CLOSED.answer_for("sqlite") == "SQLite"
    assert CLOSED.answer_for("MariaDB") is None and CLOSED.answer_for("3") is None
    assert OPEN.answer_for("MariaDB") == "MariaDB" and OPEN.answer_for("3") == "3"
    assert OPEN.answer_for("   ") is None
    assert len(OPEN.answer_for("x" * (ANSWER_LIMIT + 50)) or "") == ANSWER_LIMIT
    assert crab.Question("Name?", free_text=False).free_text  # no choices: words must answer


def test_the_question_is_masked_before_it_is_shown_and_the_answer_held_to_the_rule() -> None:
    shown: list[crab.Question] = []
    answers = iter(["1", "MariaDB"])

    async def asker(question: crab.Question) -> str | None:
        shown.append(question)
        return next(answers)

    asked = redacted_question(asker, lambda text: text.replace("sk-secret-123", "[redacted]"))
    assert asked is not None
    question = crab.Question("Use key sk-secret-123?", ("yes, sk-secret-123", "no"), free_text=False)
    assert asyncio.run(asked(question)) == "yes, sk-secret-123"  # the choice as the tool offered it
    assert shown[0] == crab.Question("Use key [redacted]?", ("yes, [redacted]", "no"), False)
    assert asyncio.run(asked(question)) is None  # words where only the choices answer: no answer
    assert redacted_question(None, str) is None


def test_the_terminal_shows_numbered_choices_between_words() -> None:
    lines = user_question_lines(OPEN, 40)
    assert lines[:4] == ["", "? Which database?", "  1. SQLite", "  2. PostgreSQL"]
    assert "or type your answer, Enter" in " ".join(lines[4:]) and all(len(line) <= 40 for line in lines)
    closed = " ".join(user_question_lines(CLOSED, 80))
    assert "type your answer" not in closed and "1-2 Enter: that choice" in closed


def answer_from(typed: bytes, question: crab.Question) -> tuple[str | None, str]:
    read, write = os.pipe()
    os.write(write, typed)
    os.close(write)
    err = io.StringIO()
    try:
        answer = ask_question_blocking(question, read, err, threading.Event(), guard=0, width=80, sleep=lambda s: None)
    finally:
        os.close(read)
    return answer, err.getvalue()


def test_the_terminal_asks_again_until_a_line_answers_and_end_of_input_is_no_answer() -> None:
    answer, shown = answer_from(b"\n", CLOSED)  # an empty line is no answer; then end of input
    assert answer is None and "? Which database?" in shown
    answer, shown = answer_from(b"MariaDB\n", CLOSED)
    assert answer is None and "not an answer: 'MariaDB'" in shown
    assert answer_from(b"2\n", CLOSED)[0] == "PostgreSQL"
    assert answer_from(b"MariaDB\n", OPEN)[0] == "MariaDB"


def test_a_tool_without_anyone_to_ask_gets_no_asker(crab_agent) -> None:
    seen: list[object] = []

    @crab.tool
    def probe(ctx: crab.ToolContext) -> str:
        """Say whether a question can be asked."""
        seen.append(ctx.question)
        return "ok"

    class Probe:
        @crab.hookimpl
        def crab_tools(self, config: crab.Config) -> list[crab.Tool]:
            return [probe]

    harness = crab_agent([[{"tool": "probe", "args": {}}], [{"text": "done"}]], plugins={"probe": Probe()})
    harness.run("go")
    assert seen == [None]


def test_choices_that_masking_makes_alike_stay_apart_so_the_pick_is_the_users() -> None:
    """Two choices differing only in a secret looked the same once masked: the user's second
    choice came back to the tool as the first."""
    shown: list[crab.Question] = []

    async def asker(question: crab.Question) -> str | None:
        shown.append(question)
        return question.answer_for("2")  # a channel gives back the (masked) choice picked

    asked = redacted_question(
        asker, lambda text: text.replace("sk-AAA-111", "[redacted]").replace("sk-BBB-222", "[redacted]")
    )
    assert asked is not None
    question = crab.Question("Which key?", ("use sk-AAA-111", "use sk-BBB-222"), free_text=False)
    assert asyncio.run(asked(question)) == "use sk-BBB-222"
    assert len({c.casefold() for c in shown[0].choices}) == 2
    assert all("sk-" not in c for c in shown[0].choices)
