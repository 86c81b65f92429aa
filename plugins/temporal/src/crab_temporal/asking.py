"""Questions across processes. On a worker, ``ask_permission`` and ``ask_question`` are the
agent's ``ask``/``question``: a tool call's question goes to its turn's workflow (the ``ask``
update, from inside the ``crab.run_tool`` activity) and the worker waits, heartbeating, for the
user's answer, at most the turn's ``question_wait`` (then ``give_up``: refused, never allowed). On
the client, ``Answering`` shows each waiting question through the session's own question path
(``crab.steps.TurnSteps.ask_user``) and sends the user's answer back."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import crab
from crab import steps

from crab_temporal.questions import ANSWERED, CLOSED, WAITING

POLL = 0.25
"""Seconds between two looks of the asking worker at its question."""
ABORTED_WAIT = 30.0
"""Seconds a call asking during an abort waits for its activity's cancel before it gives up."""


# --- the worker's side: a tool call asks --------------------------------------------------------


async def ask_permission(request: crab.PermissionRequest) -> str:
    """The gate's question (redacted already by the tool's context). Nobody answered (no client, one
    that cannot ask, a wait that ran out): ``TimeoutError``, so the gate refuses saying so rather
    than telling the model the user said no."""
    diffs = [
        {"path": diff.path, "unified": diff.unified, "added": diff.added, "removed": diff.removed}
        for diff in request.diffs
    ]
    body = {"tool": request.tool, "permission": request.permission, "summary": request.summary, "diffs": diffs}
    answer = await _ask("permission", body)
    if answer is None:
        raise TimeoutError("nobody answered the question")
    return answer if answer in ("once", "always") else "deny"


async def ask_question(question: crab.Question) -> str | None:
    """A tool's ``crab.Question`` (redacted already); None when nobody answered."""
    body = {"text": question.text, "choices": list(question.choices), "free_text": question.free_text}
    return await _ask("question", body)


async def _ask(kind: str, body: dict[str, Any]) -> str | None:
    from temporalio import activity

    if not activity.in_activity():  # a question from outside a tool call's activity: nobody to ask
        return None
    info = activity.info()
    if info.workflow_id is None:  # a standalone activity: no turn to ask through
        return None
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.service import RPCError

    handle = activity.client().get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
    try:
        got = await handle.execute_update("ask", {"activity_id": info.activity_id, "kind": kind, "body": body})
    except WorkflowUpdateFailedError:  # the turn is no longer running tools: it was aborted
        await asyncio.sleep(ABORTED_WAIT)  # its cancel of this activity is on its way
        return None
    question_id, wait = str(got["id"]), float(got["wait"])
    loop = asyncio.get_running_loop()
    end = loop.time() + wait
    # CLOSED: the turn was aborted, and this activity is being cancelled (the call then gets the
    # interrupted result, as in one process): no answer is made up meanwhile.
    while got["state"] in (*WAITING, CLOSED):
        if loop.time() >= end:  # nobody answered (no client, or one that died): refused, never allowed
            got = await handle.execute_update("give_up", question_id)
            break
        await asyncio.sleep(POLL)
        with contextlib.suppress(RPCError):  # Temporal away for a moment: look again (the wait is bounded)
            got = await handle.query("asked", question_id)
    return str(got["answer"]) if got["state"] == ANSWERED and got["answer"] is not None else None


# --- the client's side: the user is asked -------------------------------------------------------


def as_question(asked: dict[str, Any]) -> crab.PermissionRequest | crab.Question:
    """What the workflow holds (``Asked.public``) as the question the session's path shows."""
    if asked["kind"] == "permission":
        diffs = tuple(
            crab.events.FileDiff(
                str(d["path"]), str(d["unified"]), added=int(d.get("added", 0)), removed=int(d.get("removed", 0))
            )
            for d in asked.get("diffs", [])
        )
        return crab.PermissionRequest(
            str(asked["tool"]), str(asked["permission"]), str(asked["summary"]), diffs, str(asked["call_id"])
        )
    return crab.Question(str(asked["text"]), tuple(asked.get("choices", ())), bool(asked.get("free_text", True)))


class Answering:
    """The client's questions of one turn: each waiting question shown once, after the calls
    before it (``show``: the view's catch-up), one at a time as a terminal asks them."""

    def __init__(self, handle: Any, session: steps.TurnSteps, show: Any) -> None:
        self.handle = handle
        self.session = session
        self.show = show
        self.taken: set[str] = set()
        self.tasks: list[asyncio.Task[None]] = []
        self.lock = asyncio.Lock()

    def take(self, progress: dict[str, Any] | None) -> None:
        for asked in (progress or {}).get("questions", []):
            if asked["id"] not in self.taken and asked["state"] == "open":
                self.taken.add(asked["id"])
                self.tasks.append(asyncio.ensure_future(self._answer(asked)))

    async def _answer(self, asked: dict[str, Any]) -> None:
        from temporalio.client import WorkflowUpdateFailedError
        from temporalio.service import RPCError

        question = as_question(asked)
        try:
            if not self.session.can_ask(question):  # nobody here can answer: refused at once, as in one process
                await self.handle.execute_update("give_up", asked["id"])
                return
            async with self.lock:
                await self.show()  # the call it is about is on the screen before its question
                await self.handle.execute_update("shown", asked["id"])
                answer = await self.session.ask_user(question)
            await self.handle.execute_update("answer", args=[asked["id"], answer])
        except (WorkflowUpdateFailedError, RPCError):  # the question ended meanwhile (abort, the wait ran out)
            pass

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(BaseException):
                await task
