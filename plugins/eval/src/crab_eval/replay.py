"""Replaying a recorded session: its replies played back, its tool calls run live, results compared.

The replay runs in a scratch copy of the workspace (the user's folder only with ``in_place``),
through ``crab.Agent`` with today's plugins and the ``replay`` provider, on the memory store.
Paths of the recorded workspace in a call's arguments point into the copy; in the results they
are read back as the recorded path, so a result differs only when the tool did something else.
A call the user refused in the recording is refused again; one they allowed is allowed, unless
``confirm`` (given for a session file, whose answers are not the user's) says no.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import crab

from crab_eval import replay_provider
from crab_eval.script import reply_steps, rewritten
from crab_eval.tape import RecordedSession

REFUSALS = ("Refused: ", "The user refused this ")


@dataclass(frozen=True)
class CallOutcome:
    """One recorded call beside its live result (``live`` None: the replay never ran it)."""

    number: int
    call: crab.messages.ToolCall
    recorded: crab.messages.ToolResultMessage | None
    live: crab.events.ToolResultEvent | None

    @property
    def same(self) -> bool:
        if self.recorded is None or self.live is None:
            return self.recorded is None and self.live is None
        if _refused(self.recorded.content) and _refused(self.live.content):
            return True  # refused both times; the wording names the mode that refused
        return self.recorded.content == self.live.content and self.recorded.is_error == self.live.is_error


@dataclass
class ReplayReport:
    session: str
    workspace: Path
    outcomes: list[CallOutcome] = field(default_factory=list)
    replies_served: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def differing(self) -> list[CallOutcome]:
        return [o for o in self.outcomes if not o.same]


def _refused(text: str) -> bool:
    return text.startswith(REFUSALS)


def _summary(call: crab.messages.ToolCall, limit: int = 200) -> str:
    """The permission question's summary of a call, as the gate writes it."""
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
    text = f"{call.name}({args})"
    return text if len(text) <= limit else text[: limit - 1] + "…"


class RecordedAnswers:
    """Answers the permission gate as the user answered in the recording: refused calls stay refused."""

    def __init__(
        self,
        calls: list[tuple[crab.messages.ToolCall, bool]],
        confirm: Callable[[crab.PermissionRequest], bool] | None = None,
    ) -> None:
        self.pending = list(calls)
        self.confirm = confirm

    def __call__(self, request: crab.PermissionRequest) -> str:
        same_tool = [i for i, (call, _) in enumerate(self.pending) if call.name == request.tool]
        exact = [i for i in same_tool if _summary(self.pending[i][0]) == request.summary]
        if not same_tool:
            return "deny"  # a call the recording never asked about
        _, refused = self.pending.pop((exact or same_tool)[0])
        if refused or (self.confirm is not None and not self.confirm(request)):
            return "deny"
        return "once"


def scratch_copy(source: Path) -> Path:
    """A copy of ``source`` in a fresh temporary folder (symlinks kept as links)."""
    root = Path(tempfile.mkdtemp(prefix="crab-replay-"))
    target = root / (source.name or "workspace")
    shutil.copytree(source, target, symlinks=True, ignore_dangling_symlinks=True)
    return target


def replay(
    session: RecordedSession,
    *,
    workspace: Path | None = None,
    in_place: bool = False,
    until: int | None = None,
    plugins: list[str] | None = None,
    confirm: Callable[[crab.PermissionRequest], bool] | None = None,
) -> ReplayReport:
    """Re-run ``session``; ``until`` stops after that many tool calls (counted from 1); ``confirm``
    has the last word on each call the recording allowed."""
    source = (workspace or Path(session.info.workspace)).expanduser().resolve()
    if not source.is_dir():
        raise crab.UsageError(
            f"the session's workspace {source} is not a folder here: name one to copy with --workspace DIR"
        )
    work = source if in_place else scratch_copy(source)
    original, scratch = str(source), str(work)

    def to_scratch(text: str) -> str:
        return text.replace(original, scratch) if original != scratch else text

    def to_original(text: str) -> str:
        return text.replace(scratch, original) if original != scratch else text

    turns: list[list[replay_provider.Reply]] = []
    planned: list[tuple[int, crab.messages.ToolCall]] = []
    answers: list[tuple[crab.messages.ToolCall, bool]] = []
    for index, turn in enumerate(session.turns):
        if until is not None and len(planned) >= until:
            break
        replies: list[replay_provider.Reply] = []
        for message in turn.replies:
            calls = message.tool_calls if message.stop_reason not in ("error", "aborted") else ()
            if until is not None and len(planned) + len(calls) >= until:
                calls = calls[: until - len(planned)]
                replies.append(reply_steps(message, to_scratch, calls))
                planned += [(index, call) for call in calls]
                replies.append([{"text": f"(replay stopped after call {until})"}])
                break
            replies.append(reply_steps(message, to_scratch, calls))
            planned += [(index, call) for call in calls]
        for _, call in planned[len(answers) :]:
            result = session.turns[index].results.get(call.id)
            moved = crab.messages.ToolCall(call.id, call.name, rewritten(call.arguments, to_scratch))
            answers.append((moved, result is not None and _refused(result.content)))
        turns.append(replies)

    script = replay_provider.TurnScript(turns)
    model = replay_provider.serve(script)
    # By turn and id: a call id is unique within a turn only (each `crab run` of a session counts afresh).
    live: dict[tuple[int, str], crab.events.ToolResultEvent] = {}
    current = [0]

    def listen(event: crab.events.Event) -> None:
        if isinstance(event, crab.events.ToolResultEvent):
            live[current[0], event.call_id] = crab.events.ToolResultEvent(
                call_id=event.call_id,
                name=event.name,
                content=to_original(event.content),
                is_error=event.is_error,
                duration_ms=event.duration_ms,
            )

    report = ReplayReport(session.info.id, work)
    most = max((len(t) for t in turns), default=1) + 2
    try:
        with crab.Agent(
            f"{replay_provider.NAME}/{model}",
            plugins=plugins,
            store="memory",
            workspace=work,
            permissions="ask",
            ask=RecordedAnswers(answers, confirm),
            settings={"crab.max_iterations": most, "crab.compact_at": 1.0},
            listeners=[listen],
        ) as agent:
            session_id: str | None = None
            for index in range(len(turns)):
                script.begin(index)
                current[0] = index
                outcome = agent.run_sync(session.turns[index].prompt, session=session_id)
                session_id = outcome.session_id
                if outcome.error:
                    report.errors.append(f"turn {index + 1}: {outcome.error}")
    finally:
        replay_provider.withdraw(model)
    report.replies_served = script.served
    for number, (index, call) in enumerate(planned, start=1):
        recorded = session.turns[index].results.get(call.id)
        report.outcomes.append(CallOutcome(number, call, recorded, live.get((index, call.id))))
    return report
