"""The tools and the command of background shells: ``bash`` with ``background``, ``bash_output``,
``bash_kill`` and ``/jobs``.

Starting a job is ``bash``'s ``exec`` permission; reading and ending the session's own jobs are
``read`` (no new question: the user already let the command run, and a call can only reach jobs
of its own session). A job's end is told to the model by the first ``bash_output`` after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from crab import Command, CommandContext, Tool, ToolContext, ToolResult, tool
from crab.secrets import Redactor, known_secrets

from crab_tools_basic import job_output, jobs
from crab_tools_basic.jobs import Job, JobTable, seconds
from crab_tools_basic.settings import Settings
from crab_tools_basic.workspace import settings_of

COMMAND_SHOWN = 60
"""Characters of a job's command ``/jobs`` shows."""


def _table(ctx: ToolContext, settings: Settings) -> JobTable:
    return jobs.table_for(ctx, settings.bash_max_jobs, settings.bash_job_buffer)


async def start_background(command: str, workspace: Path, timeout: float | None, ctx: ToolContext) -> ToolResult:
    """``bash`` with ``background: true``: start the job, answer with its id at once."""
    settings = settings_of(ctx)
    job = await _table(ctx, settings).start(command, workspace, timeout)
    until = f"ends after {timeout:g} s, or " if timeout is not None else "runs until "
    return ToolResult(
        f"started {job.id} in the background; it {until}bash_kill, the end of the session or crab's exit. "
        f'Read its new output with bash_output(job_id="{job.id}").',
        details={"job_id": job.id, "background": True},
    )


def _status(job: Job) -> str:
    if job.running:
        return f"[{job.id} is running ({seconds(job.runtime())} so far)]"
    return f"[{job.id} {job.describe_end()}]"


async def bash_output(
    job_id: Annotated[str, "the id bash returned (job-1, ...)"],
    ctx: ToolContext,
    filter: Annotated[
        str | None, "regular expression: only new lines it matches are shown, the others skipped for good"
    ] = None,
) -> ToolResult:
    settings = settings_of(ctx)
    table = _table(ctx, settings)
    job = table.get(job_id)
    if filter is not None:
        from crab_tools_basic.line_filter import check_pattern

        check_pattern(filter)
    redactor = Redactor(known_secrets(ctx.config))
    ended_before = not job.running  # the end is only reported once every byte before it was read
    text, dropped = job_output.take(job, redactor, lines_only=filter is not None, hold_limit=settings.bash_job_buffer)
    if filter is not None:
        from crab_tools_basic.line_filter import matching_lines

        text = await matching_lines(text, filter)
    text, cut = job_output.bounded(text)
    parts = []
    if dropped:
        parts.append(
            f"[{dropped} bytes of output before this were dropped: a job keeps only its last "
            f"{settings.bash_job_buffer} bytes; read more often, or send the output to a file]"
        )
    if cut:
        parts.append(cut)
    parts.append(text.rstrip("\n") or ("(no new matching output)" if filter is not None else "(no new output)"))
    parts.append(_status(job))
    details: dict[str, object] = {"job_id": job.id, "state": job.state, "dropped_bytes": dropped}
    failed = False
    if ended_before:
        details["exit_code"] = job.returncode
        failed = job.ended_by is None and job.returncode != 0
        job.reported = True
        if job.cursor == job.ring.total and not job.pending:
            job.ring.release()  # all of it was read: only the record stays (for /jobs)
    return ToolResult("\n".join(parts), is_error=failed, details=details)


async def bash_kill(job_id: Annotated[str, "the job's id"], ctx: ToolContext) -> ToolResult:
    table = _table(ctx, settings_of(ctx))
    job = table.get(job_id)
    if not job.running:
        return ToolResult(f"{job.id} had already ended: it {job.describe_end()}", details={"job_id": job.id})
    await table.kill(job)
    return ToolResult(
        f"{job.id} ended (SIGTERM, then SIGKILL after {jobs.KILL_GRACE:g} s for what was left); "
        "bash_output shows the output it wrote last",
        details={"job_id": job.id, "exit_code": job.returncode},
    )


def make_job_tools() -> list[Tool]:
    """bash_output and bash_kill."""
    reader = tool(
        name="bash_output",
        description=(
            "Read what a background job wrote since the last read, and whether it still runs.\n\n"
            "Shows new stdout and stderr (at most the last 2,000 lines / 50 KB), then the job's "
            "state or exit code. Returns at once; between reads do other work, or run a short "
            "`sleep` with bash if you must wait."
        ),
        permission="read",
        timeout=job_output_timeout(),
        output_limit=None,
    )(bash_output)
    killer = tool(
        name="bash_kill",
        description="End a background job and every process it started (SIGTERM, then SIGKILL).",
        permission="read",  # only this session's own jobs, which the user already let run
        timeout=jobs.KILL_GRACE + jobs.REAP + 5.0,
        output_limit=None,
    )(bash_kill)
    return [reader, killer]


def job_output_timeout() -> float:
    """Seconds bash_output may take: the filter's deadline and a margin."""
    from crab_tools_basic.line_filter import DEADLINE

    return DEADLINE + 5.0


def list_jobs(table: JobTable | None) -> str:
    """``/jobs``: one line per job (id, state, runtime, exit code, command)."""
    if table is None or not table.jobs:
        return "no background jobs in this session"
    rows = [("id", "state", "runtime", "exit", "command")]
    for job in table.jobs.values():
        code = "-" if job.running or job.returncode is None else str(job.returncode)
        command = " ".join(job.command.split())
        if len(command) > COMMAND_SHOWN:
            command = command[: COMMAND_SHOWN - 1] + "…"
        rows.append((job.id, job.state, seconds(job.runtime()), code, command))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join([*(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)), row[4]]).rstrip()
        for row in rows
    )


async def _jobs_command(ctx: CommandContext, args: str) -> str:
    return list_jobs(jobs.session_table(ctx.handle.config, ctx.session.id))


def jobs_command() -> Command:
    return Command(
        "jobs",
        "list this session's background shells: id, state, runtime, exit code, command",
        _jobs_command,
    )
