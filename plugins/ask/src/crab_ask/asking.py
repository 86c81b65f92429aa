"""The ``ask_user`` tool: the model's question checked and bounded, asked through ``ctx.question``,
and the user's answer (or why there is none) as the result.

Where nobody can answer (``ctx.question`` is None: ``crab run`` without a terminal, a scheduled job,
a channel without questions) the result says so at once; no answer within ``[plugins.ask]
timeout`` is no answer, never a hung turn.
"""

from __future__ import annotations

import asyncio
from typing import Any

import crab

QUESTION_CHARS = 2000
CHOICES = 10
CHOICE_CHARS = 200
WAIT_CAP = 86_400.0
"""The tool's own timeout: the setting bounds the wait below it; this only keeps the loop's default
(``[crab] tool_timeout``, made for tools that work, not for a person reading) from cutting it."""

GO_ON = "Go on without it: make the safest reasonable assumption and say which, or stop and say what you need."
NOBODY = (
    "Nobody can answer questions in this run (no terminal to ask on, a scheduled job, or a channel "
    "that cannot ask). " + GO_ON
)
NO_ANSWER = "The user gave no answer (declined or closed the question). " + GO_ON

DESCRIPTION = """Ask the user a question and wait for the answer. Use it only when you cannot go on \
well without their decision or knowledge (an ambiguous request, a choice between approaches with \
real trade-offs, a missing fact); never for things you can find out yourself. Offer `choices` when \
the answer is one of a few options (the user picks one; set `allow_other` to false to allow only \
those); without choices the user answers in their own words. Ask one clear question at a time. \
Where nobody can answer (a run without a terminal, a scheduled job) the result says so at once."""


def checked(arguments: dict[str, Any]) -> crab.Question:
    """The call's arguments as a ``crab.Question``; ``crab.ToolError`` with what to fix otherwise."""
    text = " ".join(str(arguments.get("question", "")).split())
    if not text:
        raise crab.ToolError("ask_user needs a non-empty question")
    if len(text) > QUESTION_CHARS:
        raise crab.ToolError(f"the question has {len(text)} characters; ask in at most {QUESTION_CHARS}")
    choices: list[str] = []
    for raw in arguments.get("choices") or []:
        choice = " ".join(str(raw).split())
        if not choice:
            raise crab.ToolError("a choice is empty; give each choice some text")
        if len(choice) > CHOICE_CHARS:
            raise crab.ToolError(f"a choice has {len(choice)} characters; keep each to {CHOICE_CHARS}")
        if choice.casefold() in (c.casefold() for c in choices):
            raise crab.ToolError(f"the choice {choice!r} is there twice; give distinct choices")
        choices.append(choice)
    if len(choices) > CHOICES:
        raise crab.ToolError(f"{len(choices)} choices are too many to read; offer at most {CHOICES}")
    if len(choices) == 1 and not arguments.get("allow_other", True):
        raise crab.ToolError("one choice with allow_other false is no question; offer two or more, or allow other")
    return crab.Question(text, tuple(choices), bool(arguments.get("allow_other", True)) or not choices)


async def ask_user(arguments: dict[str, Any], ctx: crab.ToolContext) -> crab.ToolResult:
    """Ask, wait at most ``[plugins.ask] timeout`` seconds, and say what the user answered."""
    question = checked(arguments)
    details: dict[str, Any] = {"question": question.text, "choices": list(question.choices)}
    if ctx.question is None:
        return crab.ToolResult(NOBODY, is_error=True, details={**details, "answered": False})
    wait = float(ctx.settings.get("timeout", 900))
    try:
        async with asyncio.timeout(wait):
            answer = await ctx.question(question)
    except TimeoutError:
        text = f"The user did not answer within {wait:g} s. {GO_ON}"
        return crab.ToolResult(text, is_error=True, details={**details, "answered": False})
    if answer is None:
        return crab.ToolResult(NO_ANSWER, is_error=True, details={**details, "answered": False})
    said = "chose" if answer in question.choices else "answered"
    return crab.ToolResult(f"The user {said}: {answer}", details={**details, "answered": True, "answer": answer})


def ask_user_tool() -> crab.Tool:
    """The tool: read permission (it changes nothing), alone in its reply (one question at a time,
    never beside a permission question), no output limit beyond the answer's own."""
    return crab.Tool(
        name="ask_user",
        description=DESCRIPTION,
        parameters={
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question, in one or two sentences."},
                "choices": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": f"Optional answers to pick from (at most {CHOICES}, short).",
                },
                "allow_other": {
                    "type": "boolean",
                    "description": "With choices: whether the user may answer in other words (default true).",
                },
            },
            "required": ["question"],
            "additionalProperties": False,
        },
        handler=ask_user,
        permission="read",
        exclusive=True,
        timeout=WAIT_CAP,
    )
