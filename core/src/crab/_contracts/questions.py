"""A question a tool puts to the user (``ToolContext.question``, None where nobody can answer), and
its one answer rule (``Question.answer_for``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

ANSWER_LIMIT = 4000
"""Characters of an answer kept (a pasted log must not flood the model's context)."""


@dataclass(frozen=True, slots=True)
class Question:
    """What the user is asked: ``text``, optional ``choices`` and whether other words may answer
    (``free_text``; always so without choices)."""

    text: str
    choices: tuple[str, ...] = ()
    free_text: bool = True

    def __post_init__(self) -> None:
        if not self.choices and not self.free_text:
            object.__setattr__(self, "free_text", True)  # a question with no choices takes words

    def answer_for(self, typed: str) -> str | None:
        """The answer ``typed`` gives: ``"2"`` or a choice's own text (any case) picks that choice,
        other non-blank words answer when ``free_text``; None when it is no answer (ask again)."""
        said = typed.strip()
        if not said:
            return None
        if said.isdigit() and 1 <= int(said) <= len(self.choices):
            return self.choices[int(said) - 1]
        for choice in self.choices:
            if said.casefold() == choice.strip().casefold():
                return choice
        return said[:ANSWER_LIMIT] if self.free_text else None


AskQuestion = Callable[[Question], Awaitable[str | None]]
"""How a channel asks the user a question; the user's answer, or None when none was given."""
