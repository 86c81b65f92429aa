"""The permission question's rules: type-ahead is a draft, only a word confirmed after the guard answers."""

from __future__ import annotations

import asyncio

import crab
import pytest
from crab_render_rich.question import GUARD, Question, parse_answer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def question(clock: Clock, draft: str = "") -> Question:
    loop = asyncio.new_event_loop()
    future: asyncio.Future[crab.Answer] = loop.create_future()
    loop.close()  # the future only holds the answer here; nothing awaits it
    return Question(crab.PermissionRequest("bash", "exec", "bash(command='ls')"), future, draft, clock)


@pytest.mark.parametrize(
    ("typed", "answer"),
    [("y", "once"), (" YES ", "once"), ("a", "always"), ("always", "always"), ("n", "deny"), ("no", "deny")],
)
def test_the_words_that_answer(typed: str, answer: str) -> None:
    assert parse_answer(typed) == answer


@pytest.mark.parametrize("typed", ["", "aaaa", "anything new?", "ya", "yes please", "\n", "alw"])
def test_everything_else_is_not_an_answer(typed: str) -> None:
    assert parse_answer(typed) is None


def test_nothing_answers_before_the_question_was_shown_and_read() -> None:
    clock = Clock()
    asked = question(clock, draft="anything ")
    assert not asked.listening() and asked.entered("a") is None  # not drawn yet
    asked.drawn()
    assert asked.shown() and not asked.shown()  # the guard starts once, when it reached the screen
    asked.set_aside("new?")
    clock.now += GUARD / 2
    assert asked.entered("y") is None and not asked.future.done()
    assert asked.draft == "anything new?"  # the keys typed on are the user's draft, kept
    assert asked.prompt() == "… " and "keys go to your draft" in " · ".join(asked.help())
    clock.now += GUARD
    assert asked.listening() and asked.prompt() == "answer ❯ "
    assert asked.entered("aaaa") is None and "not an answer: 'aaaa'" in asked.ansi()
    assert asked.entered("a") == "always" and asked.future.result() == "always"


def test_the_question_is_set_apart_on_lines_of_its_own() -> None:
    text = question(Clock(), draft="half a wo").ansi()
    assert text.startswith("\n") and "\n\x1b[1;33m? allow exec: bash(command='ls')" in text
    assert "kept for after the question: half a wo" in text
