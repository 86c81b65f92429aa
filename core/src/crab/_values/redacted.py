"""What the user is asked, with secrets masked: a permission question (``redacted_ask``), the diffs
it shows (``redacted_diff``) and a ``crab.Question`` (``redacted_question``), so whoever shows them
(the terminal, the live chat's input, a remote chat) gets printable text, as every event is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from crab._contracts.events import FileDiff
from crab._contracts.interception import Answer, AskUser, PermissionRequest
from crab._contracts.questions import AskQuestion, Question


def redacted_ask(ask: AskUser | None, redact: Callable[[str], str]) -> AskUser | None:
    """``ask`` given the question with secrets masked (``redact``): whoever shows it (the terminal,
    the live chat's input, a remote chat) gets printable text, as every event is."""
    if ask is None:
        return None
    asker = ask

    async def asked(request: PermissionRequest) -> Answer:
        diffs = tuple(redacted_diff(diff, redact) for diff in request.diffs)
        shown = PermissionRequest(
            redact(request.tool), request.permission, redact(request.summary), diffs, request.call_id
        )
        return await asker(shown)

    return asked


def redacted_diff(diff: FileDiff, redact: Callable[[str], str]) -> FileDiff:
    """``diff`` with secrets masked in its path and every text it holds."""
    return replace(
        diff,
        path=redact(diff.path),
        unified=redact(diff.unified),
        before=None if diff.before is None else redact(diff.before),
        after=None if diff.after is None else redact(diff.after),
    )


def redacted_question(ask: AskQuestion | None, redact: Callable[[str], str]) -> AskQuestion | None:
    """``ask`` given the question with secrets masked (``redact``), and held to the answer rule: an
    answer that is not one (a choice that was not offered) is no answer; a long one is cut."""
    if ask is None:
        return None
    asker = ask

    async def asked(question: Question) -> str | None:
        shown = Question(redact(question.text), _distinct([redact(c) for c in question.choices]), question.free_text)
        answer = await asker(shown)
        if not isinstance(answer, str):
            return None
        checked = shown.answer_for(answer)
        if checked is None:
            return None
        # A choice picked is given back as the tool offered it (the masked text was only shown).
        return question.choices[shown.choices.index(checked)] if checked in shown.choices else checked

    return asked


def _distinct(choices: list[str]) -> tuple[str, ...]:
    """Masked choices, each told apart: two that differed only in a secret would read the same,
    and the one picked would come back as the first of them. A repeat gets its number, `` (2)``."""
    seen: set[str] = set()
    kept: list[str] = []
    for number, choice in enumerate(choices, 1):
        if choice.strip().casefold() in seen:
            choice = f"{choice} ({number})"
        seen.add(choice.strip().casefold())
        kept.append(choice)
    return tuple(kept)
