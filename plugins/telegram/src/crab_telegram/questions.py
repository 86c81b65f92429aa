"""A tool's question (``crab.Question``, crab-ask's ``ask_user``) in a Telegram chat.

The question is a message with a button per choice (``crab:<nonce>:<index>``); where other words
may answer, the user's next message in the chat does. An answer is taken only from what the user
did after the question was shown: a press of one of its buttons, a reply to it, or a message
Telegram dated after the second it dated the question (by its clock, never this host's: a
message written before it is an input of its own, answered after the turn, as type-ahead at a
terminal is kept for later). In a group, only
the user whose message is being answered may answer (``permission_answer = "asker"``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import crab
    from telegram import Message

BUTTON_CHARS = 60
"""Characters of a choice shown on its button (the message lists each in full)."""


@dataclass(frozen=True, slots=True)
class OpenQuestion:
    """A question waiting in one chat: what was asked, its answer's future, who may answer, and
    when (the date Telegram gave its message; local time only when it gave none) and as which
    message it was shown."""

    question: crab.Question
    future: asyncio.Future[str | None]
    address: str
    asker: int | None
    sent_at: float
    message_id: int | None


def question_text(question: crab.Question) -> str:
    """The message: the question, its numbered choices, and how to answer."""
    lines = [f"crab asks: {question.text}"]
    if question.choices:
        lines += ["", *(f"{number}. {choice}" for number, choice in enumerate(question.choices, 1))]
    if question.choices and question.free_text:
        lines += ["", "Press a button, or send your answer."]
    elif question.choices:
        lines += ["", "Press a button."]
    else:
        lines += ["", "Send your answer."]
    return "\n".join(lines)


def question_buttons(question: crab.Question, nonce: str) -> Any:
    """An inline keyboard of the choices, one per row (None without choices)."""
    if not question.choices:
        return None
    from telegram import InlineKeyboardButton, InlineKeyboardMarkup

    def label(number: int, choice: str) -> str:
        shown = choice if len(choice) <= BUTTON_CHARS else choice[: BUTTON_CHARS - 1] + "…"
        return f"{number}. {shown}"

    return InlineKeyboardMarkup(
        [
            [InlineKeyboardButton(label(n, c), callback_data=f"crab:{nonce}:{n - 1}")]
            for n, c in enumerate(question.choices, 1)
        ]
    )


def pressed(waiting: OpenQuestion, data: str) -> str | None:
    """The choice a button's ``<index>`` stands for; None for anything else."""
    if not data.isdigit() or int(data) >= len(waiting.question.choices):
        return None
    return waiting.question.choices[int(data)]


def after_shown(waiting: OpenQuestion, message: Message) -> bool:
    """Whether ``message`` was written after the question was shown (see the module)."""
    replied = message.reply_to_message
    if replied is not None and waiting.message_id is not None and replied.message_id == waiting.message_id:
        return True
    return message.date.timestamp() > waiting.sent_at


def settle(waiting: OpenQuestion, answer: str | None) -> None:
    if not waiting.future.done():
        waiting.future.set_result(answer)
