"""Which of a turn's steps run as local activities (in the worker that runs the turn's workflow
task, recorded as a marker: no task round trip through Temporal's server) and which as regular
activities (scheduled on the task queue, taken by any worker): the workflow asks here.

Local: the steps that are cheap and safe to carry out again, because each finds what an earlier
attempt stored and records nothing twice (``crab.begin``, ``crab.settle``; ``crab.carry_out``'s
``record``, which stores a mark before its message), or asks a hook again as a retry always did
(``crab.carry_out``'s ``submit`` and ``check_end``), and the model call, whose earlier reply is
the last stored message. A local activity's attempt restarts at 1 when its worker dies (the
workflow task moves to another worker, which has no record of the attempt), so a local step
looks in the store on every attempt, never trusting ``attempt`` alone.

Regular: every tool call (the work a turn spreads over workers; a call that changes things keeps
its started mark and its heartbeats) and a compaction (long, and not safe to run twice)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

LOCAL_STEPS = "crab-local-steps"
"""The ``workflow.patched`` id under which a turn runs its local steps: a history recorded before
(every step a regular activity) replays as it ran."""

LOCAL_ACTIVITIES = frozenset({"crab.begin", "crab.call_model", "crab.settle"})
LOCAL_CARRY_OUTS = frozenset({"record", "submit", "check_end"})
"""``crab.carry_out``'s kinds that run locally (``compact`` does not)."""


def runs_locally(name: str, args: list[Any]) -> bool:
    """Whether activity ``name`` with ``args`` (the workflow's) is one of the local steps."""
    if name in LOCAL_ACTIVITIES:
        return True
    return name == "crab.carry_out" and len(args) > 1 and args[1] in LOCAL_CARRY_OUTS


def local_options(options: dict[str, Any]) -> dict[str, Any]:
    """A regular activity's options as a local activity takes them: no heartbeat timeout (a worker
    that dies while a local step runs is noticed by its workflow task's timeout), and retries
    kept in the worker for a minute before each waits on a timer in Temporal."""
    local = {key: value for key, value in options.items() if key != "heartbeat_timeout"}
    local["local_retry_threshold"] = timedelta(minutes=1)
    return local
