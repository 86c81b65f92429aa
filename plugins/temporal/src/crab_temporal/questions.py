"""The questions a turn's workflow holds open: a tool's permission question or ``crab.Question``
asked on a worker, bound to the call under way (the machine's ``Ask`` step) and answered only by
the user, after the client showed it. Pure state: the workflow's update handlers call it (its
refusals are their validators'), so it replays as the workflow does."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import crab
from crab import PermissionRequest, Question, steps

OPEN, SHOWN, ANSWERED, EXPIRED, CLOSED = "open", "shown", "answered", "expired", "closed"
WAITING = (OPEN, SHOWN)
KINDS = ("permission", "question")
ANSWERS = ("once", "always", "deny")
TEXT_CAP = 4_000
"""Characters of a question's text (or a permission's summary) that travel: it is in Temporal's history."""
DIFF_CAP = 8_000
"""Characters of a permission question's diffs that travel (each diff's unified text, cut)."""


class Refused(ValueError):
    """An ask or an answer the turn does not take (the line says why); the sender's update fails."""


@dataclass
class Asked:
    """One question: ``id`` is its ``Ask`` step's, ``body`` what the client shows (redacted on the
    worker before it travels)."""

    id: str
    call_id: str
    kind: str
    body: dict[str, Any]
    step: steps.Ask
    state: str = OPEN
    answer: str | None = None

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "call_id": self.call_id, "kind": self.kind, "state": self.state, **self.body}


@dataclass
class Questions:
    """The questions of one turn, and the permission classes the user allowed "always" (the
    session's, carried from turn to turn by the client that holds the user's channel)."""

    wait: float
    always: set[str] = field(default_factory=set)
    asked: dict[str, Asked] = field(default_factory=dict)

    def check_ask(self, machine: steps.TurnMachine, request: dict[str, Any]) -> crab.messages.ToolCall:
        """The call of the ``RunTools`` under way that ``request`` (from its activity) asks about."""
        if request.get("kind") not in KINDS:
            raise Refused(f"a question of kind {request.get('kind')!r}")
        step = machine.step
        if not isinstance(step, steps.RunTools) or step.skip is not None:
            raise Refused(f"a question while {type(step).__name__} {step.id} is the step")
        for call in step.calls:
            if f"crab.run_tool:{steps.result_id(step, call)}" == request.get("activity_id"):
                return call
        raise Refused(f"a question from {request.get('activity_id')!r}, which runs no call of step {step.id}")

    def ask(self, machine: steps.TurnMachine, request: dict[str, Any]) -> Asked:
        """Open the question (the machine's ``Ask`` about the call); a permission of a class the
        user allowed "always" is answered so at once, as the in-process gate never asks it again."""
        call = self.check_ask(machine, request)
        kind = str(request["kind"])
        body = _body(kind, dict(request.get("body") or {}))
        question: PermissionRequest | Question
        if kind == "permission":
            question = PermissionRequest(body["tool"], body["permission"], body["summary"], (), call.id)
        else:
            question = Question(body["text"], tuple(body["choices"]), bool(body["free_text"]))
        step = machine.ask(call.id, question)
        asked = self.asked[step.id] = Asked(step.id, call.id, kind, body, step)
        if kind == "permission" and body["permission"] in self.always:
            self._settle(machine, asked, ANSWERED, "always")
        return asked

    def check_shown(self, question_id: str) -> Asked:
        asked = self._known(question_id)
        if asked.state != OPEN:
            raise Refused(f"question {question_id} is {asked.state}, not waiting to be shown")
        return asked

    def shown(self, question_id: str) -> None:
        self.check_shown(question_id).state = SHOWN

    def check_answer(self, question_id: str, answer: str | None) -> Asked:
        """Refused: an unknown question, one not shown yet, one answered or given up already, an
        answer a permission does not take."""
        asked = self._known(question_id)
        if asked.state == OPEN:
            raise Refused(f"question {question_id} has not been shown to the user: no answer to it yet")
        if asked.state != SHOWN:
            raise Refused(f"question {question_id} is {asked.state}: this answer comes too late")
        if asked.kind == "permission" and answer not in ANSWERS:
            raise Refused(f"a permission is answered once, always or deny, not {answer!r}")
        if answer is not None and not isinstance(answer, str):
            raise Refused("an answer is text or none")
        return asked

    def answer(self, machine: steps.TurnMachine, question_id: str, answer: str | None) -> None:
        asked = self.check_answer(question_id, answer)
        if answer is not None:
            answer = answer[:TEXT_CAP]
        self._settle(machine, asked, ANSWERED, answer)
        if asked.kind == "permission" and answer == "always":
            permission = asked.body["permission"]
            self.always.add(permission)
            for other in self.asked.values():  # the user's word covers the class, as in one process
                if other.kind == "permission" and other.state in WAITING and other.body["permission"] == permission:
                    self._settle(machine, other, ANSWERED, "always")

    def give_up(self, machine: steps.TurnMachine, question_id: str) -> Asked:
        """Nobody answered in time (or nobody can): the question ends without an answer; one
        answered meanwhile keeps its answer."""
        asked = self._known(question_id)
        if asked.state in WAITING:
            self._settle(machine, asked, EXPIRED, None)
        return asked

    def close_all(self) -> None:
        """The turn was aborted: no question of it takes an answer any more."""
        for asked in self.asked.values():
            if asked.state in WAITING:
                asked.state = CLOSED

    def waiting(self) -> list[dict[str, Any]]:
        return [asked.public() for asked in self.asked.values() if asked.state in WAITING]

    def _known(self, question_id: str) -> Asked:
        asked = self.asked.get(str(question_id))
        if asked is None:
            raise Refused(f"no question {question_id!r} in this turn")
        return asked

    def _settle(self, machine: steps.TurnMachine, asked: Asked, state: str, answer: str | None) -> None:
        asked.state, asked.answer = state, answer
        try:
            machine.answer(asked.step, steps.Answered(answer))
        except steps.StepError:  # the turn was aborted meanwhile: its questions were closed
            asked.state = CLOSED


def _body(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """What the client shows, bounded (the worker redacted it before it travelled)."""
    if kind == "permission":
        diffs = []
        room = DIFF_CAP
        for diff in body.get("diffs") or []:
            unified = str(diff.get("unified", ""))[: max(room, 0)]
            room -= len(unified)
            added, removed = int(diff.get("added", 0)), int(diff.get("removed", 0))
            diffs.append(
                {"path": str(diff.get("path", ""))[:500], "unified": unified, "added": added, "removed": removed}
            )
        return {
            "tool": str(body.get("tool", ""))[:200],
            "permission": str(body.get("permission", "")),
            "summary": str(body.get("summary", ""))[:TEXT_CAP],
            "diffs": diffs,
        }
    choices = [str(choice)[:TEXT_CAP] for choice in body.get("choices") or []][:50]
    return {
        "text": str(body.get("text", ""))[:TEXT_CAP],
        "choices": choices,
        "free_text": bool(body.get("free_text", True)),
    }
