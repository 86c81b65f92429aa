"""A program's permission and question callbacks (sync or async), turned into what the gate and
tools await (docs/library.md#permissions, #questions-to-the-user)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from crab._contracts.interception import Answer, AskUser, PermissionRequest
from crab._contracts.questions import AskQuestion, Question

AskCallback = Callable[[PermissionRequest], "Answer | str | Awaitable[Answer | str]"]
"""What a program may pass as ``ask``: sync or async, answering once / always / deny; raising
``TimeoutError`` when no answer came (the call is refused saying nobody answered)."""


QuestionCallback = Callable[[Question], "str | Awaitable[str | None] | None"]
"""What a program may pass as ``question``: sync or async, answering with the user's words or None."""


class PermissionCallbackError(Exception):
    """The program's ``ask`` callback raised: the call is refused, and the line names the callback."""


def as_ask(callback: AskCallback | None) -> AskUser | None:
    """``callback`` as an ``AskUser`` coroutine function (None stays None: the gate refuses)."""
    if callback is None:
        return None
    ask = callback

    async def asked(request: PermissionRequest) -> Answer:
        try:
            answer: Any = ask(request)
            if inspect.isawaitable(answer):
                answer = await answer
        except TimeoutError:  # no answer came (nobody there): the gate refuses saying so
            raise
        except Exception as exc:  # the gate refuses the call; the line says whose fault it was
            raise PermissionCallbackError(
                f"the program's permission callback raised {type(exc).__name__}: {exc}"
            ) from exc
        if answer == "once":
            return "once"
        if answer == "always":
            return "always"
        return "deny"  # any other answer too: an unsure callback must not widen what the model may do

    return asked


class QuestionCallbackError(Exception):
    """The program's ``question`` callback raised: no answer, and the line names the callback."""


def as_question(callback: QuestionCallback | None) -> AskQuestion | None:
    """``callback`` as an ``AskQuestion`` coroutine function (None stays None: nobody can answer)."""
    if callback is None:
        return None
    ask = callback

    async def asked(question: Question) -> str | None:
        try:
            answer: Any = ask(question)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:  # the tool reports it; the line says whose fault it was
            raise QuestionCallbackError(f"the program's question callback raised {type(exc).__name__}: {exc}") from exc
        return answer if isinstance(answer, str) else None

    return asked


class SessionAsker:
    """One session's questions: asked one at a time, and not again for a class allowed "always".

    Calls of one reply run side by side, so two questions could be pending at once, and an
    "always" answered to the first would not spare the second: hence one asker per session.
    """

    def __init__(self, ask: AskUser) -> None:
        self.ask = ask
        self.always: set[str] = set()
        self.lock = asyncio.Lock()

    async def __call__(self, request: PermissionRequest) -> Answer:
        async with self.lock:
            if request.permission in self.always:
                return "always"
            answer = await self.ask(request)
            if answer == "always":
                self.always.add(request.permission)
            return answer
