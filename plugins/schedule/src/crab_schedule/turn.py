"""One agent job's turn: the session it runs in, held to the job's permissions and to its timeout,
and how it ended (the answer or an error, a timeout, the tool calls that failed on the way)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import crab

from crab_schedule import ceiling
from crab_schedule.jobs import Job
from crab_schedule.timing import describe_seconds

JOB_CHANNEL = "schedule"  # a CLI job's own keyed session: session_for("schedule", job id)
LISTED_FAILURES = 3  # tool failures named in a run's log line; the rest are counted
FAILURE_CHARS = 120  # of each failure's first line


@dataclass(frozen=True, slots=True)
class TurnResult:
    """``text``: the answer (empty on error). ``aborted``: the turn was aborted (crab serve's stop
    does that). ``tool_failures``: one line naming the tool calls that failed, or None."""

    text: str = ""
    error: str | None = None
    aborted: bool = False
    timed_out: bool = False
    tool_failures: str | None = None


def summarize_failures(failures: list[str]) -> str | None:
    """``2 tool calls failed: bash: exit 1; read: no such file`` (None: none failed)."""
    if not failures:
        return None
    count = len(failures)
    named = "; ".join(failures[:LISTED_FAILURES])
    more = f"; and {count - LISTED_FAILURES} more" if count > LISTED_FAILURES else ""
    return f"{count} tool call{'s' if count != 1 else ''} failed: {named}{more}"


def _failure_line(event: crab.events.ToolResultEvent) -> str:
    first = next((line.strip() for line in event.content.splitlines() if line.strip()), "(no message)")
    return f"{event.name}: {first if len(first) <= FAILURE_CHARS else first[: FAILURE_CHARS - 1] + '…'}"


async def _session(agent: crab.AgentHandle, job: Job) -> crab.SessionView:
    origin = job.origin
    if origin.channel and origin.address is not None:
        return await agent.session_for(origin.channel, origin.address)
    if origin.session_id:
        try:
            return await agent.resume(origin.session_id)
        except crab.StoreError:
            pass  # the terminal session that added it is gone: the job gets one of its own
    return await agent.session_for(JOB_CHANNEL, job.id)


async def run_turn(agent: crab.AgentHandle, job: Job, *, default_timeout: float) -> TurnResult:
    """Run ``job``'s prompt as one turn in its session, for at most its timeout (else ``default_timeout``)."""
    session = await _session(agent, job)
    limit = job.timeout or default_timeout
    failures: list[str] = []

    def watch(event: crab.events.Event) -> None:
        # Events arrive redacted (Agent.emit); a failed tool call is otherwise invisible in the
        # outcome when the model still answers.
        if isinstance(event, crab.events.ToolResultEvent) and event.is_error:
            failures.append(_failure_line(event))

    unsubscribe = agent.subscribe(watch, session=session)
    # Held here (crab_before_tool_call) and, on a turn engine, collected by it (crab_turn_ceilings)
    # and held on its workers.
    ceiling.hold(session.id, job.permissions)
    deadline = asyncio.timeout(limit)
    try:
        async with deadline:
            # The prefix tells the model why it speaks, and keeps a prompt from routing as /cmd or !sh.
            outcome = await agent.handle_input(session, f"[scheduled job {job.id}] {job.text}")
    except TimeoutError:
        if not deadline.expired():
            raise  # not ours: a failure inside the turn, reported as the job's error
        # Cancelling handle_input aborted the turn cleanly (its session stays whole).
        where = "the job's timeout" if job.timeout else "[plugins.schedule] job_timeout"
        return TurnResult(
            error=f"timed out after {describe_seconds(limit)} ({where})",
            timed_out=True,
            tool_failures=summarize_failures(failures),
        )
    finally:
        ceiling.release(session.id, job.permissions)
        unsubscribe()
    summary = summarize_failures(failures)
    if outcome.stop == "aborted":
        return TurnResult(error=outcome.error or "the turn was aborted", aborted=True, tool_failures=summary)
    if outcome.stop == "error" or outcome.error:
        return TurnResult(error=outcome.error or f"the turn ended with {outcome.stop}", tool_failures=summary)
    return TurnResult(text=(outcome.text or "").strip() or "(the agent gave no answer)", tool_failures=summary)
