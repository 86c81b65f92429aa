"""Questions on a plain terminal (``crab chat`` without a live input, ``crab run``): the permission
gate's, and a tool's ``crab.Question``; neither ever takes its answer from type-ahead."""

from __future__ import annotations

import os
import select
import shutil
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from typing import TextIO

from crab._contracts.interception import Answer, PermissionRequest
from crab._contracts.questions import Question

GUARD = 0.8
"""Seconds after the question is shown during which keys are not taken as its answer."""
WORDS: dict[str, Answer] = {"y": "once", "yes": "once", "a": "always", "always": "always", "n": "deny", "no": "deny"}
LINE_LIMIT = 4096
"""Bytes of an answer line kept; the rest of a longer line is read and dropped."""
POLL = 0.1
"""Seconds between checks, while waiting for a line, that the question is still open."""
QUESTION_DIFF_LINES = 40
"""Lines of the diff a question shows; a longer one is folded ("… N more lines")."""


def parse_answer(text: str) -> Answer | None:
    """``"y"`` → once, ``"a"`` → always, ``"n"`` → deny (also spelled out); anything else → None."""
    return WORDS.get(text.strip().lower())


def flush_input(fd: int) -> None:
    """Throw away what was typed on terminal ``fd`` and not read yet (nothing for a pipe or file)."""
    try:
        import termios
    except ImportError:  # not a POSIX system: nothing to flush with
        return
    try:
        if os.isatty(fd):
            termios.tcflush(fd, termios.TCIFLUSH)
    except (OSError, termios.error):
        pass


def question_lines(request: PermissionRequest, width: int) -> list[str]:
    """The question and its keys, broken between words to ``width`` columns, after a blank line."""
    from crab._builtin.render_plain import visible

    # Control characters shown, not sent: a tool's arguments come from the model.
    summary = visible(" ".join(request.summary.split()))
    width = max(20, width)
    ask = textwrap.wrap(f"? allow {visible(request.permission)}: {summary}", width, subsequent_indent="  ")
    keys = _pack(["y Enter: once", f"a Enter: {request.permission} for this session", "n Enter: no"], width)
    return ["", *ask, *question_diff_lines(request), *keys]


def question_diff_lines(request: PermissionRequest, limit: int = QUESTION_DIFF_LINES) -> list[str]:
    """The diff the call would apply, indented under the question (none when the tool cannot tell)."""
    from crab._builtin.render_plain import diff_lines

    return [f"  {line}" for line in diff_lines(request.diffs, limit)]


def _pack(parts: list[str], width: int) -> list[str]:
    """``parts`` joined by `` · `` on as few lines as fit ``width``, none broken inside."""
    lines: list[str] = []
    for part in parts:
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return lines


def read_line(fd: int, stop: threading.Event) -> str | None:
    """One line typed on ``fd`` (without its newline), or None at end of input or once ``stop`` is set.

    Reads the descriptor itself, not ``sys.stdin``: nothing typed before the question can sit in
    a Python buffer, and a question given up (Ctrl-C) stops reading, so it takes no later line."""
    data = b""
    while not stop.is_set():
        ready, _, _ = select.select([fd], [], [], POLL)
        if not ready:
            continue
        chunk = os.read(fd, LINE_LIMIT)
        if not chunk:
            return None
        data = (data + chunk)[: LINE_LIMIT + 1]
        if b"\n" in chunk:
            return data.split(b"\n", 1)[0].decode("utf-8", "replace")
    return None


def ask_blocking(
    request: PermissionRequest,
    fd: int,
    err: TextIO,
    stop: threading.Event,
    *,
    guard: float = GUARD,
    width: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Answer:
    """Show the question on ``err`` and read its answer from terminal ``fd``.

    What was typed before it appeared is thrown away (the terminal's input queue is flushed), the
    question starts on a line of its own, keys pressed in the first ``guard`` seconds (before a
    person can have read it) are thrown away too, and only a word then confirmed with Enter
    answers: ``y`` (once), ``a`` (this permission for the session), ``n`` (no). Anything else asks
    again; end of input (Ctrl-D) says no, and Ctrl-C stops the turn, so the call does not run
    either. A call that would change files shows the diff under it, folded when long.
    """
    columns = width if width is not None else shutil.get_terminal_size((80, 24)).columns
    flush_input(fd)
    err.write("\n".join(question_lines(request, columns)) + "\n")
    err.flush()
    sleep(guard)
    while not stop.is_set():
        flush_input(fd)
        err.write("answer (y, a or n, then Enter)> ")
        err.flush()
        line = read_line(fd, stop)
        if line is None:
            err.write("\n")
            return "deny"
        answer = parse_answer(line)
        if answer is not None:
            return answer
        said = " ".join(line.split())  # repr() below shows any control character
        said = said if len(said) <= 40 else said[:39] + "…"
        err.write(f"not an answer: {said!r}\n")
    return "deny"


async def ask_on_terminal(request: PermissionRequest) -> Answer:
    """Ask on this process's terminal (stderr, stdin): y = once, a = always for this class in this
    session, n = no; the reading thread stops when the question is given up (the turn stopped)."""
    import asyncio

    from crab._system.threads import run_in_thread

    stop = threading.Event()
    try:
        # A daemon thread: Ctrl-C while the question waits must not wait for a line at exit.
        answer: Answer = await run_in_thread(
            ask_blocking, {"request": request, "fd": sys.stdin.fileno(), "err": sys.stderr, "stop": stop}
        )
    except asyncio.CancelledError:
        stop.set()
        raise
    return answer


def user_question_lines(question: Question, width: int) -> list[str]:
    """A tool's question, its numbered choices and how to answer, to ``width`` columns, after a blank line."""
    from crab._builtin.render_plain import visible

    width = max(20, width)
    lines = ["", *textwrap.wrap(f"? {visible(' '.join(question.text.split()))}", width, subsequent_indent="  ")]
    for number, choice in enumerate(question.choices, 1):
        lines += textwrap.wrap(
            f"{number}. {visible(' '.join(choice.split()))}", width, initial_indent="  ", subsequent_indent="     "
        )
    return [*lines, *_pack(_how_to_answer(question), width)]


def _how_to_answer(question: Question) -> list[str]:
    parts: list[str] = []
    if question.choices:
        parts.append(f"1-{len(question.choices)} Enter: that choice" if len(question.choices) > 1 else "1 Enter: it")
    if question.free_text:
        parts.append("or type your answer, Enter" if question.choices else "type your answer, Enter")
    return [*parts, "Ctrl-D: no answer"]


def ask_question_blocking(
    question: Question,
    fd: int,
    err: TextIO,
    stop: threading.Event,
    *,
    guard: float = GUARD,
    width: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """Show ``question`` on ``err`` and read its answer from terminal ``fd``, guarded as
    ``ask_blocking``: a choice's number or text, or (when it allows them) other words, confirmed
    with Enter; None at end of input or once ``stop`` is set."""
    columns = width if width is not None else shutil.get_terminal_size((80, 24)).columns
    flush_input(fd)
    err.write("\n".join(user_question_lines(question, columns)) + "\n")
    err.flush()
    sleep(guard)
    while not stop.is_set():
        flush_input(fd)
        err.write("answer> ")
        err.flush()
        line = read_line(fd, stop)
        if line is None:
            err.write("\n")
            return None
        answer = question.answer_for(line)
        if answer is not None:
            return answer
        if line.strip():
            said = " ".join(line.split())
            said = said if len(said) <= 40 else said[:39] + "…"
            err.write(f"not an answer: {said!r} (pick 1-{len(question.choices)})\n")
    return None


async def ask_question_on_terminal(question: Question) -> str | None:
    """Ask a tool's question on this process's terminal (stderr, stdin); the reading thread stops
    when the question is given up (the turn stopped)."""
    import asyncio

    from crab._system.threads import run_in_thread

    stop = threading.Event()
    try:
        answer: str | None = await run_in_thread(
            ask_question_blocking, {"question": question, "fd": sys.stdin.fileno(), "err": sys.stderr, "stop": stop}
        )
    except asyncio.CancelledError:
        stop.set()
        raise
    return answer
