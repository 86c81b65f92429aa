"""What a hook's exit code and output mean, by Claude Code's rules, as one ``Answer`` per run.

- exit 0: proceed. stdout that is a JSON object is read: ``continue: false`` (with
  ``stopReason``), ``decision: "block"`` with ``reason``, ``hookSpecificOutput`` with
  ``permissionDecision`` (``deny`` refuses a tool call; ``allow`` and ``ask`` leave the decision
  to crab's permission gate), ``permissionDecisionReason``, ``updatedInput`` and
  ``additionalContext``, and ``systemMessage`` (shown to the user). Plain stdout of
  ``UserPromptSubmit`` and ``SessionStart`` is context for the model; of other events it is ignored.
- exit 2: block; stderr is the reason (stdout is ignored). Of an event that cannot block
  (``USER_ONLY``) stderr is shown to the user only.
- any other exit, a timeout, a start that failed: a non-blocking error, one line for the user.

An ``http`` hook answers the same way through its response: a 2xx body is read as a command's
stdout on exit 0 (plain text is context), any other status, a refused connection or a timeout
is a non-blocking error; it cannot block by status alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from crab_hooks.runner import HookRun

CONTEXT_EVENTS = ("UserPromptSubmit", "SessionStart")
USER_ONLY = ("SessionStart", "SessionEnd", "SubagentStart", "PostCompact", "PreCompact")
"""Events whose exit 2 only shows stderr to the user (crab cannot hold off a compaction: PreCompact
is one of them here, README.md says why)."""
MAX_TEXT = 10_000
"""Characters of one hook's reason or context passed on (Claude Code cuts about as much)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """One hook run, read: block (with a reason), context for the model, new input, a user line."""

    block: str | None = None
    stop: bool = False
    """``continue: false``: end what is going on (a turn, a prompt), not only this step."""
    context: str | None = None
    updated_input: dict[str, Any] | None = None
    notice: str | None = None
    """A line for the user: a failure, or the hook's ``systemMessage``."""
    allow: bool = False
    """A PermissionRequest hook's ``decision.behavior: "allow"``."""
    message: str | None = None
    """The hook's ``systemMessage`` itself (also in ``notice``): an ``async`` hook's is context."""


def _cut(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"… [{len(text) - MAX_TEXT} more characters cut]"


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    return first if len(first) <= 200 else first[:199] + "…"


def _name(run: HookRun) -> str:
    kind = "http hook " if run.hook.kind == "http" else ""
    return f"{kind}{run.hook.command!r} ({run.hook.source})"


def read(run: HookRun, event: str) -> Answer:
    """The answer of one run of an ``event`` hook."""
    if run.error is not None:
        verb = "could not be reached" if run.hook.kind == "http" else "could not start"
        return Answer(notice=f"{event} hook {_name(run)} {verb}: {run.error}")
    if run.timed_out:
        return Answer(notice=f"{event} hook {_name(run)} timed out after {run.hook.timeout:g} s and was ended")
    if run.status is not None and not 200 <= run.status < 300:
        return Answer(notice=f"{event} hook {_name(run)} answered HTTP {run.status}")
    if run.exit_code == 2 and event in USER_ONLY:
        said = _one_line(run.stderr)
        return Answer(notice=f"{event} hook {_name(run)}" + (f": {said}" if said else " exited with 2"))
    if run.exit_code == 2:
        reason = _cut(run.stderr) or f"blocked by the {event} hook {run.hook.command!r}"
        return Answer(block=reason)
    if run.exit_code != 0:
        said = _one_line(run.stderr)
        return Answer(
            notice=f"{event} hook {_name(run)} failed with exit code {run.exit_code}" + (f": {said}" if said else "")
        )
    return _read_output(run, event)


def _read_output(run: HookRun, event: str) -> Answer:
    text = run.stdout.strip()
    data: Any = None
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
    if not isinstance(data, dict):
        plain = event in CONTEXT_EVENTS or run.hook.kind == "http"
        return Answer(context=_cut(text) if text and plain else None)
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    said = data.get("systemMessage")
    message = _cut(said) if isinstance(said, str) and said.strip() else None
    notice = f"{event} hook: {_one_line(message)}" if message else None
    context = specific.get("additionalContext")
    context = _cut(context) if isinstance(context, str) and context.strip() else None
    updated = specific.get("updatedInput")
    updated = updated if isinstance(updated, dict) else None
    if data.get("continue") is False:
        reason = data.get("stopReason")
        why = _cut(reason) if isinstance(reason, str) and reason.strip() else f"stopped by the {event} hook"
        return Answer(block=why, stop=True, notice=notice, message=message)
    behavior = specific.get("decision")
    if event == "PermissionRequest" and isinstance(behavior, dict):
        if behavior.get("behavior") == "allow":
            return Answer(allow=True, notice=notice, message=message)
        if behavior.get("behavior") == "deny":
            said = behavior.get("message")
            why = _cut(said) if isinstance(said, str) and said.strip() else "denied by the PermissionRequest hook"
            return Answer(block=why, notice=notice, message=message)
    block = None
    decision = specific.get("permissionDecision")
    if decision == "deny":
        reason = specific.get("permissionDecisionReason")
        block = _cut(reason) if isinstance(reason, str) and reason.strip() else f"denied by the {event} hook"
    elif data.get("decision") == "block":
        reason = data.get("reason")
        block = _cut(reason) if isinstance(reason, str) and reason.strip() else f"blocked by the {event} hook"
    return Answer(block=block, context=context, updated_input=updated, notice=notice, message=message)
