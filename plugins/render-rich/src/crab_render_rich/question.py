"""The permission gate's question in ``crab chat``: when keys may answer it, and which words do.

A question never takes its answer from type-ahead. What was typed before it appeared is set aside
as a draft (given back once it is answered); keys pressed in the first ``GUARD`` seconds after it
was drawn (before a person can have read it) go to that draft too. Only a word typed after that and
confirmed with Enter answers: ``y`` (once), ``a`` (this permission for the session), ``n`` (no);
anything else is not an answer and the question stays. Ctrl-C always says no. A call that would
change files shows the diff under the question, coloured and folded when long.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from crab import Answer, PermissionRequest

from crab_render_rich.view import one_line, pack, visible, wrap

GUARD = 0.8
"""Seconds after the question is drawn during which keys are not taken as its answer."""

WORDS: dict[str, Answer] = {"y": "once", "yes": "once", "a": "always", "always": "always", "n": "deny", "no": "deny"}


def parse_answer(text: str) -> Answer | None:
    """``"y"`` → once, ``"a"`` → always, ``"n"`` → deny (also spelled out); anything else → None."""
    return WORDS.get(text.strip().lower())


@dataclass
class Question:
    """One open question: the request, the future its answer settles, and the draft set aside."""

    request: PermissionRequest
    future: asyncio.Future[Answer]
    draft: str = ""
    clock: Callable[[], float] = time.monotonic
    shown_at: float | None = None
    not_an_answer: str = ""
    """The last entry that was not an answer (shown, so the user knows why nothing happened)."""
    _seen: bool = field(default=False, repr=False)

    def drawn(self) -> None:
        """The question is being drawn; ``shown`` follows once that reached the terminal."""
        self._seen = True

    def shown(self) -> bool:
        """The drawn question is on the terminal now: the guard starts. True the first time."""
        if not self._seen or self.shown_at is not None:
            return False
        self.shown_at = self.clock()
        return True

    def listening(self) -> bool:
        """Keys count as the answer: the question was shown at least ``GUARD`` seconds ago."""
        return self.shown_at is not None and self.clock() - self.shown_at >= GUARD

    def set_aside(self, text: str) -> None:
        """Type-ahead (keys before the question could be read): kept for the draft, not an answer."""
        self.draft += text

    def entered(self, text: str) -> Answer | None:
        """The user pressed Enter on ``text``: its answer, or None (not an answer: ask on)."""
        if not self.listening():
            return None
        answer = parse_answer(text)
        if answer is None:
            self.not_an_answer = text
            return None
        self.settle(answer)
        return answer

    def settle(self, answer: Answer) -> None:
        if not self.future.done():
            self.future.set_result(answer)

    def ansi(self, width: int = 100) -> str:
        """The question as ANSI lines ``width`` columns wide (broken between words), set apart from
        what is above it by a blank line."""
        permission = visible(self.request.permission)
        ask = wrap(f"? allow {permission}: {one_line(self.request.summary)}", width, "", "  ")
        keys = pack(["y Enter: once", f"a Enter: {permission} for this session", "n Enter or Ctrl-C: no"], width)
        lines = ["", *(f"\x1b[1;33m{line}\x1b[0m" for line in ask), *self._diff()]
        lines += [f"\x1b[1m{line}\x1b[0m" for line in keys]
        if self.not_an_answer.strip():
            said = one_line(self.not_an_answer, 40)
            lines += [
                f"\x1b[31m{line}\x1b[0m"
                for line in pack([f"not an answer: {said!r}", "type y, a or n, then Enter"], width)
            ]
        if self.draft.strip():
            kept = "kept for after the question: "
            lines.append(f"\x1b[2m  {kept}{one_line(self.draft, max(8, width - len(kept) - 2))}\x1b[0m")
        return "\n".join(lines) + "\n"

    def _diff(self) -> list[str]:
        """The change the call would make, under the question (none when its tool cannot tell)."""
        if not self.request.diffs:
            return []
        from crab_render_rich.diff_view import diff_ansi

        return diff_ansi(self.request.diffs)

    def prompt(self) -> str:
        return "answer ❯ " if self.listening() else "… "

    def help(self) -> list[str]:
        """The toolbar's parts while the question is open (most important first)."""
        if self.listening():
            return ["a permission question", "y, a or n, then Enter", "Ctrl-C: no"]
        return ["a permission question", "read it: keys go to your draft"]
