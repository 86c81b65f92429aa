"""A tool's question (``crab.Question``, crab-ask's ``ask_user``) in ``crab chat``'s live input.

Guarded as the permission question is (``crab_render_rich.question``): type-ahead goes to the
draft, keys in the first ``GUARD`` seconds after it was drawn too, and only a line typed after
that and confirmed with Enter answers it, read by ``Question.answer_for`` (a choice's number or
text; other words when the question allows them). Ctrl-C gives no answer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from crab import Question

from crab_render_rich.question import GUARD
from crab_render_rich.view import one_line, pack, wrap


@dataclass
class UserQuestion:
    """One open question: what is asked, the future its answer settles, and the draft set aside."""

    question: Question
    future: asyncio.Future[str | None]
    draft: str = ""
    clock: Callable[[], float] = time.monotonic
    shown_at: float | None = None
    not_an_answer: str = ""
    _seen: bool = field(default=False, repr=False)

    def drawn(self) -> None:
        self._seen = True

    def shown(self) -> bool:
        """The drawn question is on the terminal now: the guard starts. True the first time."""
        if not self._seen or self.shown_at is not None:
            return False
        self.shown_at = self.clock()
        return True

    def listening(self) -> bool:
        return self.shown_at is not None and self.clock() - self.shown_at >= GUARD

    def set_aside(self, text: str) -> None:
        self.draft += text

    def entered(self, text: str) -> str | None:
        """The user pressed Enter on ``text``: the answer it gives, or None (ask on)."""
        if not self.listening():
            return None
        answer = self.question.answer_for(text)
        if answer is None:
            self.not_an_answer = text
            return None
        if not self.future.done():
            self.future.set_result(answer)
        return answer

    def settle(self, _answer: object = None) -> None:
        """Closed without an answer (Ctrl-C, the chat ending)."""
        if not self.future.done():
            self.future.set_result(None)

    def ansi(self, width: int = 100) -> str:
        asked = wrap(f"? {one_line(self.question.text, 2000)}", width, "", "  ")
        lines = ["", *(f"\x1b[1;33m{line}\x1b[0m" for line in asked)]
        for number, choice in enumerate(self.question.choices, 1):
            lines += [
                f"\x1b[1m{line}\x1b[0m" for line in wrap(f"{number}. {one_line(choice, 400)}", width, "  ", "     ")
            ]
        keys = [*self._keys(), "Ctrl-C: no answer"]
        lines += [f"\x1b[2m{line}\x1b[0m" for line in pack(keys, width)]
        if self.not_an_answer.strip():
            said = one_line(self.not_an_answer, 40)
            lines += [f"\x1b[31m{line}\x1b[0m" for line in pack([f"not an answer: {said!r}", *self._keys()], width)]
        if self.draft.strip():
            kept = "kept for after the question: "
            lines.append(f"\x1b[2m  {kept}{one_line(self.draft, max(8, width - len(kept) - 2))}\x1b[0m")
        return "\n".join(lines) + "\n"

    def _keys(self) -> list[str]:
        count = len(self.question.choices)
        keys = [f"1-{count} Enter: that choice" if count > 1 else "1 Enter: it"] if count else []
        if self.question.free_text:
            keys.append("or type your answer, Enter" if count else "type your answer, Enter")
        return keys

    def prompt(self) -> str:
        return "answer ❯ " if self.listening() else "… "

    def help(self) -> list[str]:
        if self.listening():
            return ["a question for you", *self._keys(), "Ctrl-C: no answer"]
        return ["a question for you", "read it: keys go to your draft"]
