"""The permission question of plain ``crab chat``/``crab run`` never takes its answer from type-ahead:
on a real pseudo-terminal, and end to end with ``crab chat`` inside tmux."""

from __future__ import annotations

import io
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import crab
import pytest
from crab._cli.chat import header
from crab._cli.question import ask_blocking, parse_answer, question_lines
from crab._contracts.interception import Answer, PermissionRequest

REQUEST = PermissionRequest("touch", "write", "touch name=made.txt")
WAIT = 30.0
"""Seconds a wait for text allows (generous: the machine is shared)."""


def wait_until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not after {WAIT:.0f} s: {what}")
        time.sleep(0.02)


class Asking:
    """``ask_blocking`` running in a thread on the slave side of a real pseudo-terminal."""

    def __init__(self, during_guard: bytes = b"") -> None:
        self.master, self.slave = os.openpty()
        self.err = io.StringIO()
        self.stop = threading.Event()
        self.answer: list[Answer] = []
        self.during_guard = during_guard

    def guard(self, seconds: float) -> None:
        # Keys pressed right after the question was drawn: before a person can have read it.
        if not self.during_guard:
            return
        self.type(self.during_guard)
        wait_until(self.pending, "the keys typed during the guard reached the terminal")

    def pending(self) -> bool:
        import select

        return bool(select.select([self.slave], [], [], 0)[0])

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def start(self) -> None:
        def run() -> None:
            self.answer.append(ask_blocking(REQUEST, self.slave, self.err, self.stop, width=80, sleep=self.guard))

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def prompts(self) -> int:
        return self.err.getvalue().count("answer (y, a or n, then Enter)> ")

    def result(self) -> Answer:
        self.thread.join(WAIT)
        assert self.answer, "no answer after the wait"
        return self.answer[0]

    def close(self) -> None:
        self.stop.set()
        self.thread.join(WAIT)
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def asking() -> Iterator[Callable[..., Asking]]:
    made: list[Asking] = []

    def make(during_guard: bytes = b"") -> Asking:
        made.append(Asking(during_guard))
        return made[-1]

    yield make
    for one in made:
        one.close()


def test_type_ahead_and_keys_during_the_guard_never_answer(asking) -> None:
    question = asking(during_guard=b"y\n")
    question.type(b"a\n")  # typed while the tool ran: once meant "always"
    question.start()
    wait_until(lambda: question.prompts() == 1, "the answer prompt")
    assert question.answer == []
    question.type(b"n\n")
    assert question.result() == "deny"
    shown = question.err.getvalue()
    assert shown.startswith("\n? allow write: touch name=made.txt\n")  # on a line of its own
    assert "y Enter: once · a Enter: write for this session · n Enter: no" in shown


def test_anything_but_an_answer_asks_again(asking) -> None:
    question = asking()
    question.start()
    wait_until(lambda: question.prompts() == 1, "the answer prompt")
    question.type(b"\n")
    wait_until(lambda: question.prompts() == 2, "the question asked again after an empty line")
    question.type(b"maybe\n")
    wait_until(lambda: question.prompts() == 3, "the question asked again after a non-answer")
    assert "not an answer: 'maybe'" in question.err.getvalue()
    question.type(b"a\n")
    assert question.result() == "always"


def test_end_of_input_says_no(asking) -> None:
    question = asking()
    question.start()
    wait_until(lambda: question.prompts() == 1, "the answer prompt")
    question.type(b"\x04")  # Ctrl-D on an empty line
    assert question.result() == "deny"


def test_a_question_given_up_takes_no_later_line(asking) -> None:
    question = asking()
    question.start()
    wait_until(lambda: question.prompts() == 1, "the answer prompt")
    question.stop.set()  # the turn was stopped (Ctrl-C) while the question waited
    assert question.result() == "deny"
    question.type(b"next message\n")
    wait_until(question.pending, "the line is still there for the chat prompt")
    assert os.read(question.slave, 100) == b"next message\n"


@pytest.mark.parametrize(
    ("typed", "answer"),
    [("y", "once"), ("YES", "once"), (" a ", "always"), ("always", "always"), ("n", "deny"), ("no", "deny")],
)
def test_the_words_that_answer(typed: str, answer: Answer) -> None:
    assert parse_answer(typed) == answer


@pytest.mark.parametrize("typed", ["", "aaaa", "yy", "anything new?", "ok"])
def test_words_that_do_not_answer(typed: str) -> None:
    assert parse_answer(typed) is None


def test_the_question_and_the_header_break_between_words_at_40_columns() -> None:
    long = PermissionRequest("bash", "exec", "bash command=" + "word " * 20)
    for line in [*question_lines(long, 40), *header("scripted/model", "s-1234", live=True, width=40).splitlines()]:
        assert len(line) <= 40
    assert "Alt-Enter queues a" in header("p/m", "s", live=True, width=40)
    assert all(not line.endswith(("Alt-", "q")) for line in header("p/m", "s", live=True, width=40).splitlines())


def test_escape_sequences_in_the_question_are_shown_not_sent() -> None:
    hostile = PermissionRequest("bash", "exec", "bash command=echo \x1b]0;owned\x07 \x1b[2J")
    shown = "\n".join(question_lines(hostile, 80))
    assert "\x1b" not in shown and "\x07" not in shown
    assert "^[]0;owned^G" in shown


# --- end to end: crab chat in a real terminal -------------------------------------------------


PROMPT = "answer (y, a or n, then Enter)>"


def test_keys_typed_during_a_turn_never_answer_the_question_in_plain_chat(plain_chat, tmp_path: Path) -> None:
    screen = plain_chat(
        [
            [{"text": "working"}, {"tool": "wait_for", "args": {"name": "go.flag"}}],
            [{"tool": "touch", "args": {"name": "made.txt"}}],
            [{"tool": "touch", "args": {"name": "refused.txt"}}],
            [{"text": "finished"}],
        ]
    )
    work = tmp_path / "work"
    screen.type("start")
    screen.wait_for(lambda text: "working" in text, "the first reply")
    screen.type("a")  # type-ahead while the tool runs: the old question took it as "always"
    screen.type("y")
    (work / "go.flag").write_text("")
    shown = screen.wait_for(lambda text: PROMPT in text, "the answer prompt")
    assert "\n? allow write: touch" in shown  # the question starts a line of its own
    assert not (work / "made.txt").exists()
    screen.type("maybe")
    screen.wait_for(lambda text: text.count(PROMPT) == 2, "the question asked again")
    screen.type("y")
    screen.wait_for(lambda text: text.count("? allow write: touch") == 2, "the second question")
    screen.wait_for(lambda text: text.count(PROMPT) == 3, "its answer prompt")
    screen.type("n")
    screen.wait_for(lambda text: "finished" in text, "the final answer")
    assert (work / "made.txt").exists()
    assert not (work / "refused.txt").exists()


def test_bidirectional_overrides_in_the_question_are_shown_not_obeyed() -> None:
    """An override reorders what follows on screen: the command asked about would read other than what runs."""
    hostile = PermissionRequest(
        "bash",
        "exec",
        "bash command=rm -rf ~ \u202e# tidy up\u202c",
        (crab.events.FileDiff("a.py", "@@ -1 +1 @@\n-x\n+y = 1 \u2067# ok\u2069\n", 1, 1),),
    )
    shown = "\n".join(question_lines(hostile, 200))
    assert not set("\u202e\u202c\u2067\u2069") & set(shown)
    assert "rm -rf ~ \\u202e# tidy up\\u202c" in shown and "+y = 1 \\u2067# ok\\u2069" in shown
